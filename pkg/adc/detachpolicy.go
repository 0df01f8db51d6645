package adc

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// policyQueueName names the queue of DetachPolicy names whose status adc writes.
const policyQueueName = "adc_detach_policy_status"

// Event reasons about DetachPolicies.
const (
	// ReasonInvalidDetachPolicy: a policy adc ignores, and why (Warning, on the policy).
	ReasonInvalidDetachPolicy = "InvalidDetachPolicy"
	// ReasonDetachHeldByPolicy: a policy keeps a volume of a node that is not Ready attached
	// (timeout Never, no evidence yet) (Normal, on the node).
	ReasonDetachHeldByPolicy = "DetachHeldByPolicy"
)

// DetachRules returns the detach rules in force: the valid DetachPolicies, compiled, and the
// built-in rule (upstream's) for what none selects.
func (c *Controller) DetachRules() *migration.DetachPolicies {
	if p := c.detachRules.Load(); p != nil {
		return p
	}
	return migration.CompileDetachPolicies(nil, c.opts.MaxWaitForUnmount)
}

// policiesChanged recompiles the rules after any DetachPolicy changed, re-decides every node
// (a policy change while a node is down takes effect at once) and queues every policy for
// its status.
func (c *Controller) policiesChanged() {
	list := c.policySource.List()
	c.detachRules.Store(migration.CompileDetachPolicies(list, c.opts.MaxWaitForUnmount))
	for _, p := range list {
		c.policyQueue.Add(p.Name)
	}
	c.enqueueAllNodes()
}

// ruleOfAttachment returns the rule of an attached volume, found by its PersistentVolume's
// class (from the informer cache), its driver and its plugin.
func (c *Controller) ruleOfAttachment(a *attachment) *migration.DetachRule {
	plugin := ""
	if a.inTree != nil {
		plugin = a.inTree.Volume.Plugin
	}
	var pv *v1.PersistentVolume
	if a.pvName != "" {
		pv = c.lookups.PersistentVolume(a.pvName)
	} else if a.inTree != nil {
		pv = a.inTree.Volume.PV
	}
	return c.DetachRules().For(migration.DetachVolumeOf(pv, a.driver, plugin))
}

// ruleOfPair returns the rule of a pod's volume.
func (c *Controller) ruleOfPair(p *pair) *migration.DetachRule {
	return c.DetachRules().For(migration.DetachVolumeOf(p.pv, p.d.Driver, p.d.InTreePlugin))
}

// releasedByEvidence splits off the pairs whose volumes a policy's evidence frees from the
// pods of a node that is not Ready, as a deleted Node would: they are neither attached there
// nor kept, and reconcileDetach confirms the evidence on the fresh Node before detaching.
// Ready nodes (and the built-in rule) release nothing.
func (c *Controller) releasedByEvidence(node *v1.Node, pairs []*pair, now time.Time) (kept []*pair, released map[*pair]migration.DetachVerdict) {
	if migration.NotReadySince(node).IsZero() || c.DetachRules().Empty() {
		return pairs, nil
	}
	kept = pairs[:0:0]
	for _, p := range pairs {
		if v := c.ruleOfPair(p).Verdict(node, now); v.ReleasesPods {
			if released == nil {
				released = map[*pair]migration.DetachVerdict{}
			}
			released[p] = v
			continue
		}
		kept = append(kept, p)
	}
	return kept, released
}

// runPolicyWorker writes the status of queued DetachPolicies.
func (c *Controller) runPolicyWorker(ctx context.Context) {
	for c.processNextPolicy(ctx) {
	}
}

func (c *Controller) processNextPolicy(ctx context.Context) bool {
	name, quit := c.policyQueue.Get()
	if quit {
		return false
	}
	defer c.policyQueue.Done(name)
	if err := c.syncPolicyStatus(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "Writing DetachPolicy status failed, will retry", "detachPolicy", klog.KRef("", name))
		c.policyQueue.AddRateLimited(name)
		return true
	}
	c.policyQueue.Forget(name)
	return true
}

// syncPolicyStatus writes adc's verdict on one policy into its status condition Valid when it
// changed, with an Event when the policy is ignored.
func (c *Controller) syncPolicyStatus(ctx context.Context, name string) error {
	var pol *detachv1alpha1.DetachPolicy
	for _, p := range c.policySource.List() {
		if p.Name == name {
			pol = p
		}
	}
	if pol == nil {
		return nil // deleted
	}
	verdict, ok := c.DetachRules().Verdicts[name]
	if !ok {
		return nil // not compiled yet; policiesChanged queues it again
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
	if _, err := c.policyClient.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: volumeattach.FieldManager}); err != nil {
		return fmt.Errorf("writing the status of DetachPolicy %s: %w", name, err)
	}
	logger := klog.FromContext(ctx)
	if !verdict.Valid {
		c.recorder.Eventf(upd, v1.EventTypeWarning, ReasonInvalidDetachPolicy, "DetachPolicy %s is ignored (%s): %s", name, verdict.Reason, verdict.Message)
		logger.Info("Ignoring an invalid DetachPolicy", "detachPolicy", klog.KRef("", name), "reason", verdict.Reason, "message", verdict.Message)
	} else {
		logger.V(2).Info("DetachPolicy in force", "detachPolicy", klog.KRef("", name), "rule", verdict.Message)
	}
	return nil
}

// newPolicyClient is the dynamic client of DetachPolicies, for their status.
func newPolicyClient(dyn dynamic.Interface) dynamic.ResourceInterface {
	return dyn.Resource(detachv1alpha1.GroupVersionResource)
}

// notReadyLabel is the detach-latency label of a detach from a node that is not Ready: the
// evidence that forced it, or, for a volume the kubelet no longer reports in use, the
// graceful shutdown that (with that proof) released it, or not-in-use.
func notReadyLabel(node *v1.Node, forced migration.Evidence) migration.Evidence {
	switch {
	case forced != "":
		return forced
	case migration.GracefulShutdown(node):
		return migration.EvidenceGracefulShutdown
	default:
		return migration.EvidenceNotInUse
	}
}
