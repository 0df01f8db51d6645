package explain

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// next says in one sentence what happens next to a pod volume and what it waits for.
func (b *builder) next(pod *v1.Pod, active bool, v *Volume) string {
	here := v.Here
	switch {
	case !active && here != nil && here.Detach != nil:
		return "the pod no longer needs it: " + here.Detach.Why
	case !active && here != nil:
		return "the pod no longer needs it, but " + strings.Join(here.UsedBy, ", ") + " on the same node still use it: it stays attached"
	case !active:
		return "the pod no longer needs it and it is not attached to node " + pod.Spec.NodeName
	}
	held := ""
	if m := v.Controller; m != nil && m.Held != nil {
		held = fmt.Sprintf(" (the controller holds it since %s, %d retries", formatTime(m.Held.Since), m.Held.Retries)
		if m.Held.NextRetry != nil {
			held += ", next at " + formatTime(m.Held.NextRetry)
		}
		held += ")"
	}
	switch v.Mechanism {
	case migration.MechanismNotAttachable, migration.MechanismCSINoAttach:
		return "nothing to attach: the kubelet mounts it directly"
	case migration.MechanismWait, migration.MechanismError:
		until := "the cause the decision names is fixed"
		switch v.WaitCause {
		case migration.WaitDriverRegistration:
			until = "node " + pod.Spec.NodeName + "'s CSINode lists driver " + v.Driver + ", and attaches it at once then"
		case migration.WaitNodeMigrationState:
			until = "node " + pod.Spec.NodeName + " reports whether " + v.Plugin + " is migrated (its CSINode), and decides at once then"
		case migration.WaitVolumeBinding:
			until = "the claim is bound to an existing PersistentVolume"
		}
		s := "adc holds it (no attach, no detach) until " + until + held
		if here != nil {
			s += "; its existing attachment to node " + pod.Spec.NodeName + " is kept"
		}
		return s
	}
	if holder := b.holder(v); holder != nil {
		s := fmt.Sprintf("it is ReadWriteOnce and still attached to node %s", holder.Node)
		if holder.Created != nil {
			s += " since " + formatTime(holder.Created)
		}
		if len(holder.UsedBy) > 0 {
			return s + ", where it is still used by " + strings.Join(holder.UsedBy, ", ") + ": it is attached here once no pod there uses it (a Multi-Attach FailedAttachVolume Event says so on the pod)"
		}
		if holder.Detach != nil {
			return s + "; it is attached here once that detach is done: " + holder.Detach.Why
		}
		return s
	}
	switch {
	case v.Mechanism == migration.MechanismInTree && here == nil:
		return "adc attaches it with the in-tree plugin at its next reconcile (it needs an in-tree attacher: adc inside kube-controller-manager)" + held
	case here == nil:
		return "adc creates VolumeAttachment " + v.Names.VolumeAttachment + " at its next reconcile" + held
	case here.Deleting:
		return "a previous attachment to this node is being removed; it is attached again once the removal finishes"
	case here.Exists && !here.Attached && here.AttachError != "":
		return "the external-attacher failed to attach it: " + here.AttachError + "; it retries with its backoff"
	case here.Exists && !here.Attached:
		return "waiting for the external-attacher of " + v.Driver + " to attach it (ControllerPublishVolume)"
	case !here.ListedInStatus:
		return "attached; adc lists it in node " + pod.Spec.NodeName + "'s status.volumesAttached next, then the kubelet mounts it"
	case !here.InUse:
		return "attached and listed in node status: the kubelet can mount it (it has not reported it in use yet)"
	}
	return "attached, listed in node status and mounted (the kubelet reports it in use)"
}

// holder returns the attachment elsewhere that keeps a ReadWriteOnce volume from this node.
func (b *builder) holder(v *Volume) *Attachment {
	if v.MultiAttach || (v.Here != nil && (v.Here.Exists || v.Here.ListedInStatus)) {
		return nil
	}
	if len(v.Elsewhere) > 0 {
		return &v.Elsewhere[0]
	}
	return nil
}

func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}
