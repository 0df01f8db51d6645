package adc

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/creates"
	"github.com/migration-aware/adc/pkg/adc/internal/nodeplan"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// OutOfServiceTaint marks a node that is shut down for good (KEP-2268); the built-in rule
// detaches its volumes at once, even if the kubelet last reported them in use, and a
// DetachPolicy may accept it as evidence (migration.DetachRule).
const OutOfServiceTaint = v1.TaintNodeOutOfService

// reconcileDetach applies the plan of an attachment no active pod on the node needs
// (nodeplan.PlanDetach): planned on the cached node first, which can only stop a detach, then
// on the node as the API server has it now, read once per reconcile (the informer's Node may
// be older than the truth: after an API server restart the Node watch can come back long
// after the Pod and VolumeAttachment ones). Every step that moves a detach forward (removing
// the volume from node status, deleting the VolumeAttachment, calling the in-tree detacher)
// comes from that second plan.
func (r *nodeRun) reconcileDetach(ctx context.Context, a *actual.Attachment) {
	st := &readmodel.PairState{
		Node: r.node.Name, PV: a.PVName, Driver: a.Driver, Mechanism: a.Mechanism(),
		UniqueName: a.UniqueName, Phase: readmodel.PhaseDetaching,
	}
	if a.VA != nil {
		st.VolumeAttachment = a.VA.Name
	} else if a.InTree != nil {
		st.Plugin = a.InTree.Volume.Plugin
	}
	r.states = append(r.states, st)

	in := nodeplan.DetachInput{Attachment: a, Rule: r.c.ruleOfAttachment(a), Node: r.node, Now: r.now}
	if !a.Deleting && a.VA != nil && a.VA.UID == "" {
		// An expected create without an answer: withdraw it if it is still queued, else wait
		// for its answer (which wakes the node) rather than delete by name what it may make.
		switch r.c.creates.Withdraw(a.VA.Name) {
		case creates.Cancelled:
			in.Unsent = nodeplan.CreateCancelled
		case creates.Awaited:
			in.Unsent = nodeplan.CreateAwaited
		}
	}
	d := nodeplan.PlanDetach(in)
	if d.Step == nodeplan.ReadNode {
		node, err := r.freshNode(ctx)
		if err != nil {
			st.Phase = readmodel.PhaseDetachBlocked
			st.Reason = "reading the node from the API server before detaching failed; retrying: " + err.Error()
			r.errs = append(r.errs, err)
			return
		}
		in.Node, in.Fresh = node, true
		d = nodeplan.PlanDetach(in)
	}
	r.applyDetach(ctx, a, in, d, st)
}

// applyDetach carries out the plan of an attachment: reports it, emits its Events, marks the
// volume detaching and queues the detach.
func (r *nodeRun) applyDetach(ctx context.Context, a *actual.Attachment, in nodeplan.DetachInput, d nodeplan.DetachPlan, st *readmodel.PairState) {
	st.Phase, st.Reason, st.Detach = d.Phase, d.Reason, d.Verdict
	if d.RetryIn > 0 {
		r.retryIn(d.RetryIn)
	}
	if d.HeldByPolicy != "" {
		node := in.Node
		r.c.eventOnce(node.Name, func() runtime.Object { return node }, "held:"+a.Name(), v1.EventTypeNormal, ReasonDetachHeldByPolicy, d.HeldByPolicy, r.events)
	}
	if d.Step != nodeplan.Unlist && d.Step != nodeplan.Detach {
		return
	}
	node := in.Node
	if d.Forced != "" {
		verdict := in.Rule.Verdict(node, r.now)
		msg := fmt.Sprintf("Force-detaching volume %s from node %s: %s, although %s", a.Name(), node.Name, verdict.Reason, d.ForcedWhy)
		if in.Rule.Policy != migration.BuiltInRule {
			msg += " (DetachPolicy " + in.Rule.Policy + ")"
		}
		r.c.eventOnce(r.node.Name, func() runtime.Object { return node }, "node:"+node.Name, v1.EventTypeWarning, ReasonForcedDetach, msg, r.events)
		klog.FromContext(ctx).Info("Force-detaching volume", "uniqueName", d.UniqueName, "reason", verdict.Reason, "evidence", d.Forced, "detachPolicy", in.Rule.Policy)
	}
	a.UniqueName, st.UniqueName = d.UniqueName, d.UniqueName
	if d.UniqueName != "" {
		// From here on no status write lists the volume again (the status lock, held since
		// the fresh read, means none is in flight now).
		r.c.mem.MarkDetaching(r.node.Name, d.UniqueName)
	}
	if d.Step == nodeplan.Unlist {
		return
	}
	// Sent once the run's detach decisions are made and the status lock is released: a slow
	// delete or cloud detach must not stall the status writes of the nodes sharing the lock.
	r.detaches = append(r.detaches, detachJob{a: a, in: in, forced: string(d.Forced), notReadySince: d.NotReadySince, evidence: d.Evidence})
}

// detachJob is a detach a node reconcile decided on.
type detachJob struct {
	a *actual.Attachment
	// in is what the detach was planned from, to plan it again before a forced one is sent.
	in nodeplan.DetachInput
	// forced is the evidence that forced it (the forced-detach metric's reason), "" when the
	// kubelet no longer reported the volume in use.
	forced string
	// notReadySince is when the node left Ready (zero when Ready); evidence labels the
	// detach-latency histogram measured from it.
	notReadySince time.Time
	evidence      migration.Evidence
}

// freshNode reads the reconciled node from the API server (a quorum read, not the informer
// cache), once per reconcile; nil, nil when the API server no longer has it. Only detaches
// read it, so attaches and the steady state cost no GET. It takes the node's status lock
// first, which syncNode releases after the run's last detach decision: no status write of
// the node is in flight between the read and the decisions made on it, so a volume the read
// shows unlisted cannot be listed by a concurrent write before its VolumeAttachment goes.
func (r *nodeRun) freshNode(ctx context.Context) (*v1.Node, error) {
	if !r.freshRead {
		r.freshRead = true
		r.unlockStatus = r.c.nodeStatus.Locks().Lock(r.node.Name)
		r.fresh, r.freshErr = r.c.readNode(ctx, r.node.Name)
	}
	return r.fresh, r.freshErr
}

// confirmForced tells whether a forced detach, or a detach of a volume evidence freed from
// the node's pods, that the run decided may still be sent: the detach is planned again on one
// more read of the node right before it (nodeplan.Confirmed). If not, the volume is taken
// back: it stays attached and goes back into the node's status. What is left is the time
// between this read and the delete; Kubernetes has no precondition across objects.
func (r *nodeRun) confirmForced(ctx context.Context, j detachJob) bool {
	// Under the status lock, as every fresh read: no status write of the node is in flight.
	unlock := r.c.nodeStatus.Locks().Lock(r.node.Name)
	node, err := r.c.readNode(ctx, r.node.Name)
	unlock()
	ok, why := false, ""
	if err != nil {
		// Unconfirmed is not confirmed: the reconcile is retried.
		why = "confirming the forced detach failed: " + err.Error()
		r.errs = append(r.errs, err)
	} else {
		in := j.in
		in.Node, in.Fresh, in.Unsent, in.Now = node, true, nodeplan.NoCreate, r.c.opts.Clock.Now()
		ok, why = nodeplan.Confirmed(in)
	}
	if !ok {
		r.c.mem.CancelDetach(r.node.Name, j.a.UniqueName)
		klog.FromContext(ctx).Info("Not force-detaching volume after all: the node as the API server has it now does not allow it", "uniqueName", j.a.UniqueName, "reason", why)
	}
	return ok
}

// readNode is one quorum read of a Node, counted for the detach-safety metric.
func (c *Controller) readNode(ctx context.Context, name string) (*v1.Node, error) {
	node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if c.opts.Observer != nil {
		c.opts.Observer.NodeRead(nodeReadResult(err))
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s from the API server to confirm a detach is safe: %w", name, err)
	}
	return node, nil
}

// nodeReadResult is the readmodel.NodeRead value of a fresh Node read that returned err.
func nodeReadResult(err error) string {
	switch {
	case err == nil:
		return readmodel.NodeReadOK
	case apierrors.IsNotFound(err):
		return readmodel.NodeReadNotFound
	default:
		return readmodel.NodeReadError
	}
}

// detach deletes the VolumeAttachment or calls the in-tree detacher, and reports whether it
// was sent. forced is the reason label when the detach is forced, empty otherwise.
func (r *nodeRun) detach(ctx context.Context, a *actual.Attachment, forced string) bool {
	logger := klog.FromContext(ctx)
	if a.VA != nil {
		r.c.startOp(readmodel.OperationDetach, a.VA, nil, r.now)
		r.c.mem.RequestDelete(a.VA, r.now)
		if err := r.c.attachments.Delete(ctx, a.VA.Name, a.VA.UID); err != nil {
			r.c.mem.CancelDelete(a.VA)
			r.c.ops.Abort(a.VA.Name)
			r.errs = append(r.errs, err)
			return false
		}
		if forced != "" {
			r.c.ops.Forced(forced)
		}
		if obj, ok, _ := r.c.vas.GetByKey(a.VA.Name); !ok {
			// Already gone from the store (its delete event may have come before the
			// operation started): nothing will end the operation.
			r.c.ops.Abort(a.VA.Name)
		} else if va, isVA := cached.VAOf(obj); isVA && va.UID != a.VA.UID {
			r.c.ops.Abort(a.VA.Name)
		}
		logger.V(2).Info("Deleted VolumeAttachment", "volumeAttachment", klog.KRef("", a.VA.Name), "uniqueName", a.UniqueName)
		return true
	}
	if !r.c.inTree.Available() {
		// Nothing can detach it here; it stays listed as it was, and the host that can detach
		// it must take over. Never drop it silently.
		r.errs = append(r.errs, fmt.Errorf("in-tree volume %s on node %s is no longer used but this adc has no in-tree attacher to detach it: run adc inside a host that provides one, or detach it by hand", a.UniqueName, r.node.Name))
		return false
	}
	if err := r.c.inTree.Detach(ctx, a.InTree.Volume, r.node.Name, forced); err != nil {
		r.errs = append(r.errs, fmt.Errorf("in-tree detach of %s from node %s: %w", a.UniqueName, r.node.Name, err))
		return false
	}
	return true
}

// syncGoneNode detaches everything attached to a deleted node that adc managed: there is no
// kubelet left to use the volumes, and they may be needed elsewhere. The attachments of a node
// adc did not manage (no managed annotation: the kubelet attached them) belong to their owner,
// as upstream leaves them; so do those of a node deleted before this adc saw it, since it
// cannot tell who managed it.
func (c *Controller) syncGoneNode(ctx context.Context, name string, now time.Time) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	objs, _ := c.vas.ByIndex(byNodeIndex, name)
	wasManaged, known := c.mem.WasManaged(name)
	var states []readmodel.PairState
	var toDetach []*storagev1.VolumeAttachment
	left := 0
	for _, obj := range objs {
		va, ok := cached.VAOf(obj)
		if !ok {
			continue
		}
		if !wasManaged {
			ours, why, err := c.goneNodeAttachmentIsOurs(ctx, va, known)
			if err != nil {
				return 0, err
			}
			if !ours {
				left++
				states = append(states, readmodel.PairState{Node: name, Driver: va.Spec.Attacher, VolumeAttachment: va.Name, Mechanism: "csi",
					Phase: readmodel.PhaseDetachBlocked, Reason: why})
				continue
			}
		}
		states = append(states, readmodel.PairState{Node: name, Driver: va.Spec.Attacher, VolumeAttachment: va.Name, Mechanism: "csi", Phase: readmodel.PhaseDetaching,
			Reason: "the node was deleted; detaching"})
		requested := c.mem.DeleteRequested(va)
		if va.DeletionTimestamp == nil && !requested {
			toDetach = append(toDetach, va)
		}
	}
	inTree := c.mem.InTreeOf(name)
	if len(toDetach) > 0 || len(inTree) > 0 {
		// The cache may miss a node that exists (its watch is behind): force-detach only what
		// the API server confirms gone.
		node, err := c.readNode(ctx, name)
		if err != nil {
			return 0, err
		}
		if node != nil {
			logger.V(2).Info("Node is missing from the informer cache but the API server has it; detaching nothing until the cache catches up")
			return 0, nil
		}
	}
	r := &nodeRun{c: c, node: &v1.Node{}, now: now, events: map[eventKey]bool{}}
	r.node.Name = name
	for _, va := range toDetach {
		c.recorder.Eventf(va, v1.EventTypeWarning, ReasonForcedDetach, "Force-detaching: node %s was deleted", name)
		logger.Info("Force-detaching volume of deleted node", "volumeAttachment", klog.KObj(va))
		r.detach(ctx, &actual.Attachment{VA: va, Driver: va.Spec.Attacher}, readmodel.ForcedDetachNodeDeleted)
	}
	for i := range inTree {
		it := inTree[i]
		r.detach(ctx, &actual.Attachment{InTree: &it, UniqueName: it.Volume.UniqueName}, readmodel.ForcedDetachNodeDeleted)
	}
	if left > 0 {
		logger.V(2).Info("Leaving the VolumeAttachments of a deleted node adc did not manage to their owner", "count", left)
	}
	if len(r.errs) == 0 && len(objs) == 0 {
		c.flips.Forget(name)
		c.mem.ForgetGoneNode(name)
	}
	c.pairs.Set(name, states, now)
	return 0, errors.Join(r.errs...)
}

// goneNodeAttachmentIsOurs decides whether a VolumeAttachment of a deleted node that adc did
// not see managed is adc's to detach, and otherwise why not. A node adc saw without the
// managed annotation had its volumes attached by its kubelet: they are left to it, as
// upstream does. A node deleted before this adc saw it (during a leader failover, or while adc
// was down) is judged by the object itself, read fresh with its managedFields (adc's cache
// keeps none): one an attach/detach controller created (adc's field manager, or
// kube-controller-manager's before adc took over) is detached; one the kubelet created is not.
func (c *Controller) goneNodeAttachmentIsOurs(ctx context.Context, va *storagev1.VolumeAttachment, known bool) (bool, string, error) {
	if known {
		return false, "the node was deleted; adc did not manage its attachments (it had no " + ManagedAnnotation +
			" annotation), so its VolumeAttachments are left to their owner", nil
	}
	ours, found, err := volumeattach.CreatedByAttachDetachController(ctx, c.client, va.Name)
	switch {
	case err != nil:
		return false, "", fmt.Errorf("reading VolumeAttachment %s of deleted node %s to learn who created it: %w", va.Name, va.Spec.NodeName, err)
	case !found:
		return false, "the VolumeAttachment is gone", nil
	case ours:
		return true, "", nil
	}
	return false, "the node was deleted before this adc saw it and an attach/detach controller did not create this VolumeAttachment " +
		"(no field manager of one in its managedFields), so it is left to its owner; delete it by hand once the volume is safe to detach", nil
}
