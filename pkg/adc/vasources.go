package adc

import (
	storagev1 "k8s.io/api/storage/v1"
)

// vaSources finds the VolumeAttachments of one volume on any node, for the ReadWriteOnce
// multi-attach check. It replaces a client-go index on the VolumeAttachment informer, which
// kept a one-element set per volume (~450 bytes with its key, ~4.5 MB at 10,000 volumes);
// here a volume costs a map slot, its key and a one-element slice (~130 bytes).
//
// The VolumeAttachment event handler keeps it, under the controller's lock, together with the
// create expectations: when the informer shows a VolumeAttachment adc created, its expectation
// ends and it enters this map in one step, so the multi-attach check always sees it in one of
// the two. Workers start only once the handler has seen every VolumeAttachment listed at
// start-up (the handler registration's HasSynced).
type vaSources map[string][]vaOnNode

// vaOnNode is one VolumeAttachment of a volume.
type vaOnNode struct{ name, node string }

// add records va under its volume source key; nothing when it has none or is known already.
func (s vaSources) add(va *storagev1.VolumeAttachment) {
	key := vaSourceKey(va)
	if key == "" {
		return
	}
	for _, v := range s[key] {
		if v.name == va.Name {
			return
		}
	}
	s[key] = append(s[key], vaOnNode{name: va.Name, node: va.Spec.NodeName})
}

// remove forgets va.
func (s vaSources) remove(va *storagev1.VolumeAttachment) {
	key := vaSourceKey(va)
	vs := s[key]
	for i, v := range vs {
		if v.name != va.Name {
			continue
		}
		if len(vs) == 1 {
			delete(s, key)
			return
		}
		s[key] = append(vs[:i:i], vs[i+1:]...)
		return
	}
}

// nodeOtherThan returns a node other than node that has a VolumeAttachment of the volume.
func (s vaSources) nodeOtherThan(key, node string) string {
	for _, v := range s[key] {
		if v.node != node {
			return v.node
		}
	}
	return ""
}
