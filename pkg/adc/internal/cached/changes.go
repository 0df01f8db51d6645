package cached

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// Which updates matter: the informer handlers re-decide a node only for an update that
// changed something adc reads of the object (what the compact forms keep).

// NodeOnlyListsMore reports whether a Node update changed nothing but its resourceVersion,
// managedFields and status.volumesAttached, keeping every volume the old one listed.
func NodeOnlyListsMore(old, cur *v1.Node) bool {
	if !volumeattach.OnlyAdds(cur.Status.VolumesAttached, old.Status.VolumesAttached) {
		return false
	}
	o, n := *old, *cur
	o.ResourceVersion, n.ResourceVersion = "", ""
	o.ManagedFields, n.ManagedFields = nil, nil
	o.Status.VolumesAttached, n.Status.VolumesAttached = nil, nil
	return equality.Semantic.DeepEqual(&o, &n)
}

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
