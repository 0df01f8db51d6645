package adc

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
)

// OutOfServiceTaint marks a node that is shut down for good; its volumes are detached at
// once, even if the kubelet last reported them in use.
const OutOfServiceTaint = "node.kubernetes.io/out-of-service"

// reconcileDetach handles an attachment no active pod on the node needs. It detaches only
// what is safe: not reported in use by the kubelet (unless the node is out of service or not
// Ready for longer than MaxWaitForUnmount), and only after node status stopped listing it.
func (r *nodeRun) reconcileDetach(ctx context.Context, a *attachment) {
	logger := klog.FromContext(ctx)
	st := &PairState{
		Node: r.node.Name, PV: a.pvName, Driver: a.driver, Mechanism: a.mechanism(),
		UniqueName: a.uniqueName, Phase: PhaseDetaching,
	}
	if a.va != nil {
		st.VolumeAttachment = a.va.Name
	} else if a.inTree != nil {
		st.Plugin = a.inTree.volume.Plugin
	}
	r.states = append(r.states, st)

	if a.deleting {
		st.Reason = "the VolumeAttachment is being deleted; waiting for the external-attacher to detach"
		return
	}
	forced := ""
	if inUse, why := volumeInUse(r.node, a); inUse {
		force, forceWhy, wait := r.c.forceDetach(r.node, r.now)
		if !force {
			st.Phase = PhaseDetachBlocked
			st.Reason = why + "; it is detached once the kubelet unmounts it"
			if wait > 0 {
				st.Reason += fmt.Sprintf(", or in %s if the node stays not Ready", wait.Round(time.Second))
				r.retryIn(wait)
			}
			return
		}
		msg := fmt.Sprintf("Force-detaching volume %s from node %s: %s, although %s", displayAttachment(a), r.node.Name, forceWhy, why)
		r.c.eventOnce(r.node, "node:"+r.node.Name, v1.EventTypeWarning, ReasonForcedDetach, msg, r.events)
		logger.Info("Force-detaching volume", "uniqueName", a.uniqueName, "reason", forceWhy)
		forced = forcedLabel(r.node)
	}
	if a.uniqueName != "" && listed(r.node, a.uniqueName) {
		r.c.markDetaching(r.node.Name, a.uniqueName)
		st.Reason = "removing the volume from the node's status.volumesAttached before detaching it"
		return
	}
	st.Reason = "detaching: no active pod on the node uses the volume"
	r.detach(ctx, a, forced)
}

// forcedLabel is the forced-detach metric reason for a node that allows a forced detach.
func forcedLabel(node *v1.Node) string {
	for _, t := range node.Spec.Taints {
		if t.Key == OutOfServiceTaint {
			return ForcedDetachOutOfService
		}
	}
	return ForcedDetachNotReady
}

// detach deletes the VolumeAttachment or calls the in-tree detacher. forced is the reason
// label when the detach is forced, empty otherwise.
func (r *nodeRun) detach(ctx context.Context, a *attachment, forced string) {
	logger := klog.FromContext(ctx)
	if a.va != nil {
		r.c.startOp(OperationDetach, a.va, nil, r.now)
		if err := r.c.attachments.Delete(ctx, a.va.Name, a.va.UID); err != nil {
			r.c.abortOp(a.va.Name)
			r.errs = append(r.errs, err)
			return
		}
		if forced != "" {
			r.c.forced(forced)
		}
		r.c.requestedDelete(a.va.Name, r.now)
		logger.V(2).Info("Deleted VolumeAttachment", "volumeAttachment", klog.KRef("", a.va.Name), "uniqueName", a.uniqueName)
		return
	}
	attacher := r.c.opts.InTreeAttacher
	if attacher == nil {
		// Nothing can detach it here; it stays listed as it was, and the host that can detach
		// it must take over. Never drop it silently.
		r.errs = append(r.errs, fmt.Errorf("in-tree volume %s on node %s is no longer used but this adc has no in-tree attacher to detach it: run adc inside a host that provides one, or detach it by hand", a.uniqueName, r.node.Name))
		return
	}
	start := r.c.opts.Clock.Now()
	err := attacher.Detach(ctx, a.inTree.volume, r.node.Name)
	r.c.completedInTree(OperationDetach, r.node.Name, a.inTree.volume, start, err)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("in-tree detach of %s from node %s: %w", a.uniqueName, r.node.Name, err))
		return
	}
	if forced != "" {
		r.c.forced(forced)
	}
	logger.V(2).Info("Detached in-tree volume", "uniqueName", a.uniqueName)
	for _, n := range r.c.forgetInTree(r.node.Name, a.uniqueName) {
		r.c.enqueueNode(n)
	}
}

// volumeInUse reports whether the kubelet lists the attachment in status.volumesInUse. When
// the attachment's unique name cannot be known (its PersistentVolume is gone), any in-use
// volume of the same driver counts: adc does not detach what it cannot rule out.
func volumeInUse(node *v1.Node, a *attachment) (bool, string) {
	if a.uniqueName != "" {
		for _, u := range node.Status.VolumesInUse {
			if string(u) == a.uniqueName {
				return true, "the kubelet reports volume " + a.uniqueName + " in use"
			}
		}
		return false, ""
	}
	prefix := csiUniquePrefix + a.driver + "^"
	for _, u := range node.Status.VolumesInUse {
		if strings.HasPrefix(string(u), prefix) {
			return true, "the volume of VolumeAttachment " + displayAttachment(a) + " cannot be identified (its PersistentVolume is gone) and the kubelet reports volumes of driver " + a.driver + " in use"
		}
	}
	return false, ""
}

// forceDetach reports whether volumes still in use may be detached anyway, why, and
// otherwise how long until the not-Ready deadline would allow it.
func (c *Controller) forceDetach(node *v1.Node, now time.Time) (bool, string, time.Duration) {
	for _, t := range node.Spec.Taints {
		if t.Key == OutOfServiceTaint {
			return true, "the node has the " + OutOfServiceTaint + " taint", 0
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type != v1.NodeReady || cond.Status == v1.ConditionTrue {
			continue
		}
		notReady := now.Sub(cond.LastTransitionTime.Time)
		if notReady >= c.opts.MaxWaitForUnmount {
			// The message names the transition time, not the elapsed time, so that every
			// reconcile of the same outage words it the same way and eventOnce emits one Event.
			return true, fmt.Sprintf("the node has not been Ready since %s, longer than max-wait-for-unmount (%s)",
				cond.LastTransitionTime.UTC().Format(time.RFC3339), c.opts.MaxWaitForUnmount), 0
		}
		return false, "", c.opts.MaxWaitForUnmount - notReady
	}
	return false, "", 0
}

func listed(node *v1.Node, unique string) bool {
	for _, av := range node.Status.VolumesAttached {
		if string(av.Name) == unique {
			return true
		}
	}
	return false
}

func displayAttachment(a *attachment) string {
	if a.va != nil {
		return a.va.Name
	}
	return a.uniqueName
}

// syncGoneNode detaches everything attached to a node that no longer exists: there is no
// kubelet left to use the volumes, and they may be needed elsewhere.
func (c *Controller) syncGoneNode(ctx context.Context, name string, now time.Time) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	objs, _ := c.vas.ByIndex(vaByNodeIndex, name)
	r := &nodeRun{c: c, node: &v1.Node{}, now: now, events: map[eventKey]bool{}}
	r.node.Name = name
	var states []PairState
	for _, obj := range objs {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok {
			continue
		}
		states = append(states, PairState{Node: name, Driver: va.Spec.Attacher, VolumeAttachment: va.Name, Mechanism: "csi", Phase: PhaseDetaching,
			Reason: "the node was deleted; detaching"})
		c.mu.Lock()
		_, requested := c.world.deleteRequested[va.Name]
		c.mu.Unlock()
		if va.DeletionTimestamp != nil || requested {
			continue
		}
		c.recorder.Eventf(va, v1.EventTypeWarning, ReasonForcedDetach, "Force-detaching: node %s was deleted", name)
		logger.Info("Force-detaching volume of deleted node", "volumeAttachment", klog.KObj(va))
		r.detach(ctx, &attachment{va: va, driver: va.Spec.Attacher}, ForcedDetachNodeDeleted)
	}
	c.mu.Lock()
	var inTree []inTreeAttachment
	for _, it := range c.world.inTree[name] {
		inTree = append(inTree, it)
	}
	c.mu.Unlock()
	for i := range inTree {
		it := inTree[i]
		r.detach(ctx, &attachment{inTree: &it, uniqueName: it.volume.UniqueName}, ForcedDetachNodeDeleted)
	}
	if len(r.errs) == 0 && len(objs) == 0 {
		c.forgetNode(name)
	}
	c.setSnapshot(name, states, now)
	return 0, joinErrs(r.errs)
}
