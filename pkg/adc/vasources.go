package adc

import (
	"strings"

	storagev1 "k8s.io/api/storage/v1"
)

// vaSources finds the VolumeAttachments of one volume on any node, for the ReadWriteOnce
// multi-attach check. It replaces a client-go index on the VolumeAttachment informer, which
// kept a one-element set per volume (~450 bytes with its key, ~4.5 MB at 10,000 volumes);
// here a volume attached to one node costs a map slot keyed by the VolumeAttachment's own
// PersistentVolume name.
//
// It is kept, under the controller's lock, together with the create expectations, by every
// piece of evidence that a VolumeAttachment exists (observeLocked): the event handler, and the
// informer's store when the expectation checker or a returning create finds the object there
// before its handler ran (client-go updates the store first). A create expectation ends only
// in the same step that puts its object here, so the multi-attach check always sees it in one
// of the two. Workers start only once the handler has seen every VolumeAttachment listed at
// start-up (the handler registration's HasSynced).
type vaSources struct{ m multiMap[volumeKey, vaOnNode] }

func newVASources() vaSources { return vaSources{m: newMultiMap[volumeKey, vaOnNode]()} }

// volumeKey is a volume source key (vaSourceKey) split by kind, so that a PersistentVolume's
// key is its name as the VolumeAttachment holds it, allocated once.
type volumeKey struct{ pv, inline string }

// vaOnNode is one VolumeAttachment of a volume.
type vaOnNode struct{ name, node string }

func vaVolumeKey(va *storagev1.VolumeAttachment) (volumeKey, bool) {
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		return volumeKey{pv: *src.PersistentVolumeName}, true
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return volumeKey{inline: va.Spec.Attacher + "^" + src.InlineVolumeSpec.CSI.VolumeHandle}, true
	}
	return volumeKey{}, false
}

// volumeKeyOf splits a volume source key; ok is false for keys no VolumeAttachment has.
func volumeKeyOf(sourceKey string) (volumeKey, bool) {
	if name, ok := strings.CutPrefix(sourceKey, pvKeyPrefix); ok {
		return volumeKey{pv: name}, true
	}
	if rest, ok := strings.CutPrefix(sourceKey, inlineKeyPrefix); ok {
		return volumeKey{inline: rest}, true
	}
	return volumeKey{}, false
}

// add records va under its volume; nothing when it has no source or is known already.
func (s vaSources) add(va *storagev1.VolumeAttachment) {
	if k, ok := vaVolumeKey(va); ok {
		s.m.add(k, vaOnNode{name: va.Name, node: va.Spec.NodeName})
	}
}

// remove forgets va.
func (s vaSources) remove(va *storagev1.VolumeAttachment) {
	if k, ok := vaVolumeKey(va); ok {
		s.m.remove(k, vaOnNode{name: va.Name, node: va.Spec.NodeName})
	}
}

// nodeOtherThan returns a node other than node that has a VolumeAttachment of the volume
// with this source key.
func (s vaSources) nodeOtherThan(sourceKey, node string) string {
	k, ok := volumeKeyOf(sourceKey)
	if !ok {
		return ""
	}
	for _, v := range s.m.values(k) {
		if v.node != node {
			return v.node
		}
	}
	return ""
}
