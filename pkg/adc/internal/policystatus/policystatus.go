// Package policystatus writes adc's verdict on each DetachPolicy into its status: a small
// controller of its own (queue of policy names, one worker), apart from the attach/detach
// reconcile, because a policy's status is a report to its author and never gates a detach.
package policystatus

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// QueueName names the queue of DetachPolicy names whose status adc writes.
const QueueName = "adc_detach_policy_status"

// ReasonInvalid is the Warning Event on a policy adc ignores.
const ReasonInvalid = "InvalidDetachPolicy"

// Options are what the writer reads and writes through.
type Options struct {
	// Policy returns the cached policy named name, or nil.
	Policy func(name string) *detachv1alpha1.DetachPolicy
	// Verdicts returns adc's current verdict per policy name.
	Verdicts func() map[string]migration.PolicyVerdict
	// Client writes the status subresource of DetachPolicies.
	Client dynamic.Interface
	// Recorder records the Events on invalid policies.
	Recorder record.EventRecorder
	// FieldManager is the field manager of the status writes.
	FieldManager string
	Clock        clock.WithTicker
}

// Writer writes DetachPolicy statuses from its queue.
type Writer struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[string]
}

// New returns a writer; Run starts it, Enqueue asks for a policy's status to be checked.
func New(opts Options) *Writer {
	return &Writer{opts: opts, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: opts.Clock})}
}

// Enqueue asks for the status of the policy named name to be brought up to date.
func (w *Writer) Enqueue(name string) { w.queue.Add(name) }

// Run writes statuses until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for w.processNext(ctx) {
	}
}

func (w *Writer) processNext(ctx context.Context) bool {
	name, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(name)
	if err := w.sync(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "Writing DetachPolicy status failed, will retry", "detachPolicy", klog.KRef("", name))
		w.queue.AddRateLimited(name)
		return true
	}
	w.queue.Forget(name)
	return true
}

// sync writes adc's verdict on one policy into its status condition Valid when it changed,
// with an Event when the policy is ignored.
func (w *Writer) sync(ctx context.Context, name string) error {
	pol := w.opts.Policy(name)
	if pol == nil {
		return nil // deleted
	}
	verdict, ok := w.opts.Verdicts()[name]
	if !ok {
		return nil // not compiled yet; the change that compiles it queues it again
	}
	status := metav1.ConditionTrue
	if !verdict.Valid {
		status = metav1.ConditionFalse
	}
	cur := apimeta.FindStatusCondition(pol.Status.Conditions, detachv1alpha1.ConditionValid)
	if pol.Status.ObservedGeneration == pol.Generation && cur != nil && cur.Status == status && cur.Reason == verdict.Reason && cur.Message == verdict.Message {
		return nil
	}
	upd := pol.DeepCopy()
	upd.Status.ObservedGeneration = pol.Generation
	apimeta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{
		Type: detachv1alpha1.ConditionValid, Status: status, Reason: verdict.Reason, Message: verdict.Message, ObservedGeneration: pol.Generation,
	})
	u, err := detachv1alpha1.ToUnstructured(upd)
	if err != nil {
		return err
	}
	api := w.opts.Client.Resource(detachv1alpha1.GroupVersionResource)
	if _, err := api.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: w.opts.FieldManager}); err != nil {
		return fmt.Errorf("writing the status of DetachPolicy %s: %w", name, err)
	}
	logger := klog.FromContext(ctx)
	if !verdict.Valid {
		w.opts.Recorder.Eventf(upd, v1.EventTypeWarning, ReasonInvalid, "DetachPolicy %s is ignored (%s): %s", name, verdict.Reason, verdict.Message)
		logger.Info("Ignoring an invalid DetachPolicy", "detachPolicy", klog.KRef("", name), "reason", verdict.Reason, "message", verdict.Message)
	} else {
		logger.V(2).Info("DetachPolicy in force", "detachPolicy", klog.KRef("", name), "rule", verdict.Message)
	}
	return nil
}
