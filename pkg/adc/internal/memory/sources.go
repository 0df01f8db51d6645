package memory

import (
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/multimap"
)

// vaSources finds the VolumeAttachments of one volume on any node, for the ReadWriteOnce
// multi-attach check. It replaces a client-go index on the VolumeAttachment informer, which
// kept a one-element set per volume (~450 bytes with its key, ~4.5 MB at 10,000 volumes);
// here a volume attached to one node costs a map slot keyed by the VolumeAttachment's own
// PersistentVolume name.
//
// It is filled, together with the create expectations, by every piece of evidence that a
// VolumeAttachment exists (observeLocked): the event handler, and the informer's store when
// the expectation checker or a returning create finds the object there before its handler
// ran. Workers start only once the handler has seen every VolumeAttachment listed at start-up.
type vaSources struct {
	m multimap.Map[volumeKey, vaOnNode]
}

func newVASources() vaSources { return vaSources{m: multimap.New[volumeKey, vaOnNode]()} }

// vaOnNode is one VolumeAttachment of a volume.
type vaOnNode struct{ name, node string }

// add records va under its volume; nothing when it has no source or is known already.
func (s vaSources) add(va *storagev1.VolumeAttachment) {
	if k, ok := vaVolumeKey(va); ok {
		s.m.Add(k, vaOnNode{name: va.Name, node: va.Spec.NodeName})
	}
}

// remove forgets va.
func (s vaSources) remove(va *storagev1.VolumeAttachment) {
	if k, ok := vaVolumeKey(va); ok {
		s.m.Remove(k, vaOnNode{name: va.Name, node: va.Spec.NodeName})
	}
}

// has reports whether va is recorded on its node.
func (s vaSources) has(va *storagev1.VolumeAttachment) bool {
	k, ok := vaVolumeKey(va)
	if !ok {
		return false
	}
	for _, v := range s.m.Values(k) {
		if v.name == va.Name && v.node == va.Spec.NodeName {
			return true
		}
	}
	return false
}

// nodeOtherThan returns a node other than node that has a VolumeAttachment of the volume
// with this source key.
func (s vaSources) nodeOtherThan(sourceKey, node string) string {
	k, ok := volumeKeyOf(sourceKey)
	if !ok {
		return ""
	}
	for _, v := range s.m.Values(k) {
		if v.node != node {
			return v.node
		}
	}
	return ""
}
