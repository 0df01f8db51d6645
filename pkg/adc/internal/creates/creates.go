// Package creates is adc's create queue: the VolumeAttachment creates node reconciles
// decided, sent by workers of their own. It exists so that creates are not limited by how
// many nodes reconcile at once: a reconcile decides (taking the ReadWriteOnce reservation
// and recording the create expectation in memory) and queues; the queue's workers send, as
// fast as the client budget and the API server allow, and settle each answer in memory. The
// Queue owns the decided jobs, the creates in flight and the last refusals, under its lock.
package creates

import (
	"context"
	"fmt"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/retry"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// QueueName names the queue of decided VolumeAttachment creates (workqueue metrics).
const QueueName = "adc_create"

// Job is one VolumeAttachment a node reconcile decided to create: its expectation is
// recorded (memory.ExpectCreate) and, for a ReadWriteOnce volume, its reservation taken
// before the job is queued, so nothing can decide a second attach of the volume while the
// job waits for a worker.
type Job struct {
	VA        *storagev1.VolumeAttachment
	SourceKey string
	// Pod and Volume are for the log line of the create.
	Pod    klog.ObjectRef
	Volume string
}

// Memory is what the queue settles in adc's memory (memory.Memory): a create stored,
// refused (the reservation goes; it returns the nodes that waited for it), or unknown.
type Memory interface {
	Created(stored *storagev1.VolumeAttachment)
	CreateFailed(va *storagev1.VolumeAttachment, sourceKey string) []string
	CreateUncertain(va *storagev1.VolumeAttachment, now time.Time)
}

// Options are what the queue sends through and settles in.
type Options struct {
	Writer volumeattach.AttachmentWriter
	Memory Memory
	// Abort forgets the attach operation of a create that was never made (report.Operations).
	Abort func(vaName string)
	// Wake queues a node for reconcile at once, Retry after a delay (a failed create is
	// decided again by its node's reconcile, not resent as it was).
	Wake  func(node string)
	Retry func(node string, after time.Duration)
	Clock clock.WithTicker
}

// Queue holds the decided creates and sends them from Work.
type Queue struct {
	opts  Options
	queue workqueue.TypedInterface[string]
	// retries is the backoff of failed creates, per VolumeAttachment name.
	retries workqueue.TypedRateLimiter[string]

	mu sync.Mutex
	// jobs holds each queued create and inFlight each one sent and not yet answered (true:
	// a reconcile waits for its answer).
	jobs     map[string]Job
	inFlight map[string]bool
	// errs is the last refusal of each VolumeAttachment's create, shown in its pair's reason
	// until a create of it succeeds.
	errs map[string]string
}

// New returns an empty queue.
func New(opts Options) *Queue {
	return &Queue{
		opts:     opts,
		queue:    workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: QueueName, Clock: opts.Clock}),
		retries:  retry.New(opts.Clock, retry.DefaultBase, retry.DefaultMax),
		jobs:     map[string]Job{},
		inFlight: map[string]bool{},
		errs:     map[string]string{},
	}
}

// Add hands a decided create to the workers. The node reconcile does not wait for it:
// creates then flow at the rate the client budget and the API server allow (as many at once
// as there are workers, in the order they were decided, so a node's creates go together and
// nodes finish one after another), whatever the number of node workers and however long one
// create takes.
func (q *Queue) Add(j Job) {
	q.mu.Lock()
	q.jobs[j.VA.Name] = j
	q.mu.Unlock()
	q.queue.Add(j.VA.Name)
}

// Len, Get, Done and ShutDown are the work queue's, of VolumeAttachment names: a worker (or
// a test playing one) gets a name, sends its create (Send) and is done with it.
func (q *Queue) Len() int                      { return q.queue.Len() }
func (q *Queue) Get() (name string, quit bool) { return q.queue.Get() }
func (q *Queue) Done(name string)              { q.queue.Done(name) }
func (q *Queue) ShutDown()                     { q.queue.ShutDown() }

// Queued returns the create of a name that waits for a worker, if any.
func (q *Queue) Queued(name string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[name]
	return j, ok
}

// take removes and returns the queued create of a name, which is in flight from then on
// until answered.
func (q *Queue) take(name string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[name]
	if ok {
		delete(q.jobs, name)
		q.inFlight[name] = false
	}
	return j, ok
}

// answered ends the flight of a create; it returns whether a reconcile asked to be woken by
// its answer.
func (q *Queue) answered(name string) (wake bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	wake = q.inFlight[name]
	delete(q.inFlight, name)
	return wake
}

// Unsent is what a reconcile that no longer wants a VolumeAttachment finds of its create,
// when the create has no answer yet.
type Unsent int

const (
	// Answered: no create of the name is queued or in flight.
	Answered Unsent = iota
	// Cancelled: the create was still queued; it is dropped, never sent.
	Cancelled
	// Awaited: the create is in flight; its answer wakes the node.
	Awaited
)

// Withdraw is called by a node reconcile about to detach a VolumeAttachment it expects but
// has no answer for. A queued create is dropped with its expectation and reservation
// (nothing was sent, nothing is to detach); a create in flight is left to finish, and its
// answer wakes the node to detach what it made.
func (q *Queue) Withdraw(name string) Unsent {
	q.mu.Lock()
	j, queued := q.jobs[name]
	if queued {
		delete(q.jobs, name)
	} else if _, inFlight := q.inFlight[name]; inFlight {
		q.inFlight[name] = true
		q.mu.Unlock()
		return Awaited
	}
	q.mu.Unlock()
	if !queued {
		return Answered
	}
	q.opts.Abort(name)
	q.wake(q.opts.Memory.CreateFailed(j.VA, j.SourceKey))
	return Cancelled
}

// Work sends queued creates until the queue shuts down.
func (q *Queue) Work(ctx context.Context) {
	for q.ProcessNext(ctx) {
	}
}

// ProcessNext sends one queued create. A create that failed retries through its node's
// reconcile, after a per-VolumeAttachment backoff: the reconcile decides again (the pod may
// be gone, the volume attached elsewhere) rather than the create being resent as it was.
func (q *Queue) ProcessNext(ctx context.Context) bool {
	name, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(name)
	node, err := q.Send(ctx, name)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Creating VolumeAttachment failed, will retry", "volumeAttachment", klog.KRef("", name), "node", node)
		q.opts.Retry(node, q.retries.When(name))
	default:
		q.retries.Forget(name)
	}
	return true
}

// Send sends the queued create of the VolumeAttachment name and settles its expectation:
// stored (Created), refused (CreateFailed: the reservation goes and the nodes that waited for
// it are woken), or unknown (CreateUncertain: kept until the expectation checker reads the
// object). It returns the create's node and the create's error.
func (q *Queue) Send(ctx context.Context, name string) (string, error) {
	j, ok := q.take(name)
	if !ok {
		return "", nil
	}
	node := j.VA.Spec.NodeName
	if ctx.Err() != nil {
		// Shutting down: the create is not sent; nobody waits for it any more.
		q.opts.Abort(name)
		q.opts.Memory.CreateFailed(j.VA, j.SourceKey)
		return node, nil
	}
	stored, err := q.opts.Writer.Create(ctx, j.VA)
	defer func() {
		if q.answered(name) {
			q.wake([]string{node})
		}
	}()
	if err != nil {
		q.opts.Abort(name)
		if mayHaveHappened(err) {
			// A timeout may come after the API server stored the object: keep the
			// expectation and its ReadWriteOnce reservation until a read says (the
			// expectation checker), or the informer shows it.
			q.opts.Memory.CreateUncertain(j.VA, q.opts.Clock.Now())
		} else {
			q.wake(q.opts.Memory.CreateFailed(j.VA, j.SourceKey))
		}
		q.noteErr(name, err.Error())
		return node, fmt.Errorf("creating VolumeAttachment %s for node %s: %w", name, node, err)
	}
	q.noteErr(name, "")
	if stored != nil {
		q.opts.Memory.Created(stored)
	}
	klog.FromContext(ctx).V(2).Info("Created VolumeAttachment", "volumeAttachment", klog.KRef("", name),
		"node", node, "pod", j.Pod, "volume", j.Volume, "driver", j.VA.Spec.Attacher)
	return node, nil
}

// DropQueued forgets the creates no worker sent before the controller stopped, with their
// expectations and reservations.
func (q *Queue) DropQueued() {
	q.mu.Lock()
	jobs := q.jobs
	q.jobs = map[string]Job{}
	q.inFlight = map[string]bool{}
	q.mu.Unlock()
	for name, j := range jobs {
		q.opts.Abort(name)
		q.opts.Memory.CreateFailed(j.VA, j.SourceKey)
	}
}

func (q *Queue) wake(nodes []string) {
	for _, n := range nodes {
		if n != "" {
			q.opts.Wake(n)
		}
	}
}

// mayHaveHappened reports whether a failed create may have been stored anyway: every error
// but an answer of the API server that it refused the request.
func mayHaveHappened(err error) bool {
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonForbidden, metav1.StatusReasonUnauthorized, metav1.StatusReasonInvalid,
		metav1.StatusReasonBadRequest, metav1.StatusReasonNotFound, metav1.StatusReasonConflict,
		metav1.StatusReasonTooManyRequests, metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable,
		metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonGone,
		metav1.StatusReasonAlreadyExists:
		return false
	}
	return true
}

// maxErrs bounds the refusals kept for pair reasons: one per volume whose create keeps
// failing; past it (a cluster-wide outage) the oldest are not worth keeping apart from the log.
const maxErrs = 4096

// noteErr records the last refusal of a VolumeAttachment's create ("" once one succeeded),
// for the reason its pair shows on the dashboard while the create is retried.
func (q *Queue) noteErr(name, msg string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if msg == "" {
		delete(q.errs, name)
		return
	}
	if len(q.errs) >= maxErrs {
		clear(q.errs)
	}
	q.errs[name] = msg
}

// TakeErr returns the last refusal of a VolumeAttachment's create, or "", and forgets it:
// the retry that shows it queues the create again, whose answer records anew.
func (q *Queue) TakeErr(name string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	msg := q.errs[name]
	delete(q.errs, name)
	return msg
}
