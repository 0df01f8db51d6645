// Package actual is a node's actual state as adc reads it: every volume attached, attaching
// or detaching there, rebuilt on each read from memory's view of the node (the
// VolumeAttachment store with the creates it does not show yet, and the in-tree
// attachments), never kept between reads. It exists apart from the reconcile because two
// workers read it, the node reconcile (what to keep, attach and detach) and the node status
// writer (what status.volumesAttached lists), and both must see one state the same way; and
// because which attachment is a desired volume's, under any of its names, is one rule
// (Identify, Index) that a migration flip must not break.
package actual

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/migration"
)

// Attachment is one volume attached (or attaching, or detaching) to a node: a
// VolumeAttachment for CSI, an in-tree attachment otherwise.
type Attachment struct {
	VA     *storagev1.VolumeAttachment
	InTree *attachstate.InTreeAttachment
	// UniqueName is the name node status lists it under; empty when it cannot be known (a
	// VolumeAttachment whose PersistentVolume is gone and that the node lists nowhere).
	UniqueName string
	// Volume is the unique volume name (migration.VolumeName) of what it attaches: UniqueName
	// for a VolumeAttachment; for an in-tree attachment the translated name adc decided when
	// it attached it, else (learned from node status) its in-tree name.
	Volume   string
	Driver   string
	PVName   string
	Attached bool
	// Deleting: the VolumeAttachment has a deletion timestamp or adc sent its delete.
	Deleting bool

	// Matched and Released are the marks of the reconcile that read the attachment: a
	// desired volume found it (it is kept), or the verdict of the DetachPolicy whose
	// evidence (on the cached Node) freed the volume from the node's pods, which the
	// reconcile confirms on the fresh Node before it detaches.
	Matched  bool
	Released *migration.DetachVerdict
	// Detach is what DetachPolicies select the volume by, as the pod that released it said;
	// nil when no pod of the reconcile named it (the controller recovers it).
	Detach *migration.DetachVolume
}

// Mechanism is how the volume was attached: a VolumeAttachment is CSI, the rest in-tree.
func (a *Attachment) Mechanism() migration.Mechanism {
	if a.VA != nil {
		return migration.MechanismCSI
	}
	return migration.MechanismInTree
}

// Name names the attachment in messages: its VolumeAttachment, else its unique name.
func (a *Attachment) Name() string {
	if a.VA != nil {
		return a.VA.Name
	}
	return a.UniqueName
}

// InUseOn reports whether the kubelet lists the attachment in node's status.volumesInUse,
// and why. A VolumeAttachment whose volume adc cannot name (its PersistentVolume is gone) is
// recognised by its own name, which the kubelet's convention derives from handle, driver and
// node (migration.VolumeAttachmentIsFor): an in-use entry of its volume is found exactly, and
// its absence proves the volume is not in use.
func (a *Attachment) InUseOn(node *v1.Node) (bool, string) {
	for _, u := range node.Status.VolumesInUse {
		if a.is(string(u)) {
			return true, "the kubelet reports volume " + string(u) + " in use"
		}
	}
	return false, ""
}

// ListedOn reports whether node's status.volumesAttached lists the attachment: a detach
// waits until it does not.
func (a *Attachment) ListedOn(node *v1.Node) bool {
	for _, av := range node.Status.VolumesAttached {
		if a.is(string(av.Name)) {
			return true
		}
	}
	return false
}

// is reports whether unique (an entry of node status) names the attachment's volume.
func (a *Attachment) is(unique string) bool {
	if a.UniqueName != "" {
		return unique == a.UniqueName
	}
	return a.VA != nil && migration.VolumeAttachmentIsFor(a.VA, unique)
}

// PVIdentity names a CSI PersistentVolume's driver and handle from the informer cache
// (cached.Lookups); false when the volume is not cached.
type PVIdentity = migration.PVIdentityLookup

// Read rebuilds the node's actual state from the VolumeAttachment cache, the creates the
// cache has not shown yet, and the in-tree attachments (learned from the node's
// status.volumesAttached, so a restart or a takeover from another controller keeps them).
// Memory reads the store and its expectations in one step (attachstate.NodeAttachments), so a
// VolumeAttachment the informer delivers meanwhile is in one of the two, never in neither.
func Read(mem *attachstate.State, pvs PVIdentity, node *v1.Node) []*Attachment {
	view := mem.NodeAttachments(node)
	atts := make([]*Attachment, 0, len(view.VolumeAttachments)+len(view.InTree))
	for _, v := range view.VolumeAttachments {
		atts = append(atts, vaAttachment(pvs, v, node))
	}
	for _, it := range view.InTree {
		it := it
		volume := it.Volume.Name
		if volume == "" {
			volume = it.Volume.UniqueName
		}
		atts = append(atts, &Attachment{InTree: &it, UniqueName: it.Volume.UniqueName, Volume: volume, Attached: true})
	}
	return atts
}

// vaAttachment names a VolumeAttachment's volume: as memory filed it (the volume adc decided
// when it created it, or the one its PersistentVolume named when it was observed), else from
// its inline spec or PersistentVolume now, else from the node's lists (the object's own name
// says which entry is its volume).
func vaAttachment(pvs PVIdentity, v attachstate.ViewedVA, node *v1.Node) *Attachment {
	va := v.VA
	a := &Attachment{
		VA:       va,
		Driver:   va.Spec.Attacher,
		Attached: va.Status.Attached,
		Deleting: va.DeletionTimestamp != nil || v.DeleteRequested,
	}
	if src := va.Spec.Source; src.PersistentVolumeName != nil {
		a.PVName = *src.PersistentVolumeName
	}
	a.UniqueName = v.Volume
	if a.UniqueName == "" {
		a.UniqueName, _ = migration.VolumeOfAttachment(va, pvs)
	}
	if a.UniqueName == "" {
		a.UniqueName = UniqueNameOnNode(va, node)
	}
	a.Volume = a.UniqueName
	return a
}

// UniqueNameOnNode finds the unique name of a VolumeAttachment that adc cannot name from its
// PersistentVolume (deleted): the CSI volume of its driver, listed in the node's
// status.volumesAttached or volumesInUse, whose VolumeAttachment name (derived from handle,
// driver and node, as the kubelet derives it) is the object's. Empty when the node lists none.
func UniqueNameOnNode(va *storagev1.VolumeAttachment, node *v1.Node) string {
	if node == nil {
		return ""
	}
	for _, av := range node.Status.VolumesAttached {
		if migration.VolumeAttachmentIsFor(va, string(av.Name)) {
			return string(av.Name)
		}
	}
	for _, u := range node.Status.VolumesInUse {
		if migration.VolumeAttachmentIsFor(va, string(u)) {
			return string(u)
		}
	}
	return ""
}
