package adc

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// Event reasons. Operators search Events by reason; the README lists what each means and
// what to do.
const (
	// ReasonFailedAttach is upstream's reason for attach failures and Multi-Attach errors.
	ReasonFailedAttach = "FailedAttachVolume"
	// ReasonWaitingForNode: the node has not reported its migration state yet.
	ReasonWaitingForNode = "WaitingForNodeMigrationState"
	// ReasonWaitingForDriver: the node's CSINode does not list the CSI driver the volume goes
	// through yet (its node plugin has not registered); no VolumeAttachment until it does.
	ReasonWaitingForDriver = "WaitingForDriverRegistration"
	// ReasonWaitingForClaim: the pod's claim is missing, unbound, or bound to a missing PV.
	ReasonWaitingForClaim = "WaitingForVolumeBinding"
	// ReasonDecisionError: the attach cannot be decided safely (bad volume, version skew).
	ReasonDecisionError = "AttachDecisionError"
	// ReasonNoInTreeAttacher: the node is not migrated and no in-tree attacher is available.
	ReasonNoInTreeAttacher = "InTreeAttacherUnavailable"
	// ReasonForcedDetach: a volume still reported in use was detached because its node is out
	// of service, not Ready for too long, or deleted.
	ReasonForcedDetach = "ForcedDetach"
)

// eventOnce records an Event on the pod (or node) of a node's reconcile unless the same pod already got the same reason with
// the same message from this controller: one Event per pod and reason, not one per retry.
// active collects the keys that are still current, so the memory is dropped once the
// condition clears.
func (c *Controller) eventOnce(node string, obj func() runtime.Object, podKey, eventType, reason, message string, active map[eventKey]bool) {
	k := eventKey{Pod: podKey, Reason: reason}
	active[k] = true
	if c.mem.EventChanged(node, k, message) {
		c.recorder.Event(obj(), eventType, reason, message)
	}
}
