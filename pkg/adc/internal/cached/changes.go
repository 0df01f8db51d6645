package cached

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Which VolumeAttachment updates matter: the informer handler re-decides a node only for an
// update that changed something adc reads of the object (what the compact form keeps).

// VAUpdate is what a VolumeAttachment update changed of what adc reads: its identity, spec,
// deletion, status.attached and status.attachError.
type VAUpdate int

const (
	// VAUnchanged: nothing adc reads (finalizers, annotations, detachError).
	VAUnchanged VAUpdate = iota
	// VANowAttached: only status.attached, which became true without an error.
	VANowAttached
	// VAChanged: anything else.
	VAChanged
)

// VAUpdateOf says what an update changed of what adc reads of a VolumeAttachment.
func VAUpdateOf(old, cur *storagev1.VolumeAttachment) VAUpdate {
	if old.UID != cur.UID || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(&old.Spec, &cur.Spec) || !equality.Semantic.DeepEqual(old.Status.AttachError, cur.Status.AttachError) {
		return VAChanged
	}
	switch {
	case old.Status.Attached == cur.Status.Attached:
		return VAUnchanged
	case cur.Status.Attached && cur.Status.AttachError == nil:
		return VANowAttached
	}
	return VAChanged
}

// VAPending reports whether a VolumeAttachment waits for its attacher: not attached, no
// error, not being deleted.
func VAPending(va *storagev1.VolumeAttachment) bool {
	return !va.Status.Attached && va.Status.AttachError == nil && va.DeletionTimestamp == nil
}
