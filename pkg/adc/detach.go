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
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// OutOfServiceTaint marks a node that is shut down for good (KEP-2268); the built-in rule
// detaches its volumes at once, even if the kubelet last reported them in use, and a
// DetachPolicy may accept it as evidence (migration.DetachRule).
const OutOfServiceTaint = v1.TaintNodeOutOfService

// reconcileDetach handles an attachment no active pod on the node needs. It detaches only
// what is safe: not reported in use by the kubelet (unless the node is out of service or not
// Ready for longer than MaxWaitForUnmount), and only after node status stopped listing it.
//
// The informer's Node may be older than the truth (after an API server restart the Node
// watch can come back long after the Pod and VolumeAttachment ones), so the cache can only
// stop a detach, never allow one: every step that moves a detach forward (removing the volume
// from node status, deleting the VolumeAttachment, calling the in-tree detacher) is decided
// on the Node as the API server has it now, read once per reconcile.
func (r *nodeRun) reconcileDetach(ctx context.Context, a *actual.Attachment) {
	logger := klog.FromContext(ctx)
	st := &PairState{
		Node: r.node.Name, PV: a.PVName, Driver: a.Driver, Mechanism: a.Mechanism(),
		UniqueName: a.UniqueName, Phase: PhaseDetaching,
	}
	if a.VA != nil {
		st.VolumeAttachment = a.VA.Name
	} else if a.InTree != nil {
		st.Plugin = a.InTree.Volume.Plugin
	}
	r.states = append(r.states, st)

	if a.Deleting {
		st.Reason = "the VolumeAttachment is being deleted; waiting for the external-attacher to detach"
		return
	}
	if a.VA != nil && a.VA.UID == "" {
		// An expected create without an answer: withdraw it if it is still queued, else wait
		// for its answer (which wakes the node) rather than delete by name what it may make.
		switch r.c.creates.Withdraw(a.VA.Name) {
		case creates.Cancelled:
			st.Reason = "no active pod on the node uses the volume any more; its VolumeAttachment create was still queued and is not sent"
			return
		case creates.Awaited:
			st.Phase = PhaseDetachBlocked
			st.Reason = "no active pod on the node uses the volume any more; it is detached once the create of its VolumeAttachment, in flight, is answered"
			return
		}
	}
	if a.Released == nil && r.inUseBlocks(r.node, a, st) {
		return
	}
	node, err := r.freshNode(ctx)
	switch {
	case err != nil:
		st.Phase = PhaseDetachBlocked
		st.Reason = "reading the node from the API server before detaching failed; retrying: " + err.Error()
		r.errs = append(r.errs, err)
		return
	case node == nil:
		st.Phase = PhaseDetachBlocked
		st.Reason = "the API server no longer has the node; its volumes are detached once adc's cache shows the deletion"
		return
	case !migration.IsManagedNode(node):
		st.Phase = PhaseDetachBlocked
		st.Reason = "the node no longer has the " + ManagedAnnotation + " annotation; adc leaves its volumes alone"
		return
	}
	rule := r.c.ruleOfAttachment(a)
	verdict := rule.Verdict(node, r.now)
	if a.Released != nil && !verdict.ReleasesPods {
		// The cache showed evidence that freed the volume from the node's pods; the API
		// server's Node no longer does (Ready again, taint removed): the pods keep it.
		st.Phase = PhaseDetachBlocked
		st.Reason = "pods on the node still use the volume and the node as the API server has it now shows no evidence that frees it (policy " + rule.Policy + "); kept"
		return
	}
	if r.inUseBlocks(node, a, st) {
		// The cache said the volume was not in use and the API server says it is: the Node
		// cache is behind, and the event that shows the unmount may never come as a change
		// of the node (a relist folds it into one update that only lists more, which goes to
		// the status writer alone). Look again without waiting for one.
		r.retryIn(staleNodeRecheck)
		return
	}
	job := detachJob{a: a, notReadySince: migration.NotReadySince(node)}
	if inUse, why := a.InUseOn(node); inUse {
		msg := fmt.Sprintf("Force-detaching volume %s from node %s: %s, although %s", a.Name(), node.Name, verdict.Reason, why)
		if rule.Policy != migration.BuiltInRule {
			msg += " (DetachPolicy " + rule.Policy + ")"
		}
		r.c.eventOnce(r.node.Name, func() runtime.Object { return node }, "node:"+node.Name, v1.EventTypeWarning, ReasonForcedDetach, msg, r.events)
		logger.Info("Force-detaching volume", "uniqueName", a.UniqueName, "reason", verdict.Reason, "evidence", verdict.Evidence, "detachPolicy", rule.Policy)
		job.forced = string(verdict.Evidence)
	}
	job.evidence = notReadyLabel(node, migration.Evidence(job.forced))
	if job.forced == "" && a.Released != nil {
		// Not reported in use, and freed from its pods by evidence: the evidence decided it.
		job.evidence = a.Released.Evidence
	}
	if a.UniqueName == "" && a.VA != nil {
		// A VolumeAttachment whose PersistentVolume is gone: the fresh node's lists name it.
		a.UniqueName = actual.UniqueNameOnNode(a.VA, node)
		st.UniqueName = a.UniqueName
	}
	if a.UniqueName != "" {
		// From here on no status write lists the volume again (the status lock, held since
		// the fresh read, means none is in flight now).
		r.c.mem.MarkDetaching(r.node.Name, a.UniqueName)
		if a.ListedOn(node) {
			st.Reason = "removing the volume from the node's status.volumesAttached before detaching it"
			return
		}
	}
	st.Reason = "detaching: no active pod on the node uses the volume"
	if a.Released != nil {
		st.Reason = "detaching: " + a.Released.Reason + " (DetachPolicy " + a.Released.Rule + "), so the node's pods no longer use the volume"
	}
	// Sent once the run's detach decisions are made and the status lock is released: a slow
	// delete or cloud detach must not stall the status writes of the nodes sharing the lock.
	r.detaches = append(r.detaches, job)
}

// staleNodeRecheck is how soon a detach that only the fresh read of the node blocked is
// decided again.
const staleNodeRecheck = 5 * time.Second

// detachJob is a detach a node reconcile decided on.
type detachJob struct {
	a *actual.Attachment
	// forced is the evidence that forced it (the forced-detach metric's reason), "" when the
	// kubelet no longer reported the volume in use.
	forced string
	// notReadySince is when the node left Ready (zero when Ready); evidence labels the
	// detach-latency histogram measured from it.
	notReadySince time.Time
	evidence      migration.Evidence
}

// inUseBlocks reports whether node shows the attachment in use by the kubelet with no reason
// to detach it anyway (its rule's verdict); then it fills in why and when to look again.
func (r *nodeRun) inUseBlocks(node *v1.Node, a *actual.Attachment, st *PairState) bool {
	inUse, why := a.InUseOn(node)
	if !inUse {
		return false
	}
	v := r.c.ruleOfAttachment(a).Verdict(node, r.now)
	if v.Force {
		return false
	}
	st.Phase = PhaseDetachBlocked
	if !migration.NotReadySince(node).IsZero() {
		st.Detach = &v
	}
	switch wait := v.Wait(r.now); {
	case v.Held:
		st.Reason = why + "; " + v.Reason
		r.c.eventOnce(node.Name, func() runtime.Object { return node }, "held:"+a.Name(), v1.EventTypeNormal, ReasonDetachHeldByPolicy,
			fmt.Sprintf("Volume %s stays attached to node %s: %s", a.Name(), node.Name, v.Reason), r.events)
	case v.Rule == migration.BuiltInRule:
		st.Reason = why + "; it is detached once the kubelet unmounts it"
		if wait > 0 {
			st.Reason += fmt.Sprintf(", or in %s if the node stays not Ready", wait.Round(time.Second))
		}
	default:
		st.Reason = why + "; it is detached once the kubelet unmounts it, or as DetachPolicy " + v.Rule + " says: " + v.Reason
	}
	if wait := v.Wait(r.now); wait > 0 {
		r.retryIn(wait)
	}
	return true
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
// the node's pods, that the run decided may still be sent, and if not takes the volume
// back: it stays attached and goes back into the node's status.
func (r *nodeRun) confirmForced(ctx context.Context, a *actual.Attachment) bool {
	ok, why, err := r.stillForced(ctx, a)
	if err != nil {
		// Unconfirmed is not confirmed: the reconcile is retried.
		r.errs = append(r.errs, err)
	}
	if !ok {
		r.c.mem.CancelDetach(r.node.Name, a.UniqueName)
		klog.FromContext(ctx).Info("Not force-detaching volume after all: the node as the API server has it now does not allow it", "uniqueName", a.UniqueName, "reason", why)
	}
	return ok
}

// stillForced reads the node again right before a forced detach of a volume its kubelet
// reported in use is sent. The reconcile decided it on the read taken before all its other
// decisions; a node that came back since (Ready again, its out-of-service taint gone) still
// has the volume mounted, and detaching it then is what the forced-detach rules exist to
// avoid. The chaos test caught that window: a leader that had just taken over force-detached
// the volumes of a node whose kubelet came back 9 ms before the deletes. What is left is the
// time between this read and the delete; Kubernetes has no precondition across objects.
func (r *nodeRun) stillForced(ctx context.Context, a *actual.Attachment) (bool, string, error) {
	// Under the status lock, as every fresh read: no status write of the node is in flight.
	unlock := r.c.nodeStatus.Locks().Lock(r.node.Name)
	node, err := r.c.readNode(ctx, r.node.Name)
	unlock()
	switch {
	case err != nil:
		return false, "confirming the forced detach failed: " + err.Error(), err
	case node == nil:
		return false, "the API server no longer has the node; its volumes are detached once adc's cache shows the deletion", nil
	}
	v := r.c.ruleOfAttachment(a).Verdict(node, r.c.opts.Clock.Now())
	if a.Released != nil && !v.ReleasesPods {
		// Pods on the node still use the volume: only evidence that frees it from them (a
		// fencing taint, a cloud shutdown) let the detach go, and the node no longer shows it.
		return false, "pods on the node still use the volume and the node no longer shows the evidence that freed it from them (" + v.Reason + ")", nil
	}
	if inUse, _ := a.InUseOn(node); !inUse {
		return true, "", nil
	}
	if !v.Force {
		return false, "the kubelet reports the volume in use and the node no longer shows the evidence that forced its detach (" + v.Reason + ")", nil
	}
	return true, "", nil
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

// NodeReadResult values label the fresh Node reads that confirm detaches.
const (
	NodeReadOK       = "ok"
	NodeReadNotFound = "not-found"
	NodeReadError    = "error"
)

func nodeReadResult(err error) string {
	switch {
	case err == nil:
		return NodeReadOK
	case apierrors.IsNotFound(err):
		return NodeReadNotFound
	default:
		return NodeReadError
	}
}

// detach deletes the VolumeAttachment or calls the in-tree detacher, and reports whether it
// was sent. forced is the reason label when the detach is forced, empty otherwise.
func (r *nodeRun) detach(ctx context.Context, a *actual.Attachment, forced string) bool {
	logger := klog.FromContext(ctx)
	if a.VA != nil {
		r.c.startOp(OperationDetach, a.VA, nil, r.now)
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
	var states []PairState
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
				states = append(states, PairState{Node: name, Driver: va.Spec.Attacher, VolumeAttachment: va.Name, Mechanism: "csi",
					Phase: PhaseDetachBlocked, Reason: why})
				continue
			}
		}
		states = append(states, PairState{Node: name, Driver: va.Spec.Attacher, VolumeAttachment: va.Name, Mechanism: "csi", Phase: PhaseDetaching,
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
		r.detach(ctx, &actual.Attachment{VA: va, Driver: va.Spec.Attacher}, ForcedDetachNodeDeleted)
	}
	for i := range inTree {
		it := inTree[i]
		r.detach(ctx, &actual.Attachment{InTree: &it, UniqueName: it.Volume.UniqueName}, ForcedDetachNodeDeleted)
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
