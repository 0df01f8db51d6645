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
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// Attachment is one volume attached (or attaching, or detaching) to a node: a
// VolumeAttachment for CSI, an in-tree attachment otherwise.
type Attachment struct {
	VA     *storagev1.VolumeAttachment
	InTree *memory.InTreeAttachment
	// UniqueName is the name node status lists it under; empty when it cannot be known (a
	// VolumeAttachment whose PersistentVolume is gone).
	UniqueName string
	Driver     string
	PVName     string
	SourceKey  string
	Attached   bool
	// Deleting: the VolumeAttachment has a deletion timestamp or adc sent its delete.
	Deleting bool

	// Matched and Released are the marks of the reconcile that read the attachment: a
	// desired volume found it (it is kept), or the verdict of the DetachPolicy whose
	// evidence (on the cached Node) freed the volume from the node's pods, which the
	// reconcile confirms on the fresh Node before it detaches.
	Matched  bool
	Released *migration.DetachVerdict
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
// and why. When the attachment's unique name cannot be known (its PersistentVolume is gone),
// any in-use volume of the same driver counts: adc does not detach what it cannot rule out.
func (a *Attachment) InUseOn(node *v1.Node) (bool, string) {
	if a.UniqueName != "" {
		for _, u := range node.Status.VolumesInUse {
			if string(u) == a.UniqueName {
				return true, "the kubelet reports volume " + a.UniqueName + " in use"
			}
		}
		return false, ""
	}
	prefix := migration.CSIUniqueName(a.Driver, "") // <plugin>/<driver>^
	for _, u := range node.Status.VolumesInUse {
		if strings.HasPrefix(string(u), prefix) {
			return true, "the volume of VolumeAttachment " + a.Name() + " cannot be identified (its PersistentVolume is gone) and the kubelet reports volumes of driver " + a.Driver + " in use"
		}
	}
	return false, ""
}

// ListedOn reports whether node's status.volumesAttached lists the attachment: a detach
// waits until it does not.
func (a *Attachment) ListedOn(node *v1.Node) bool {
	for _, av := range node.Status.VolumesAttached {
		if string(av.Name) == a.UniqueName {
			return true
		}
	}
	return false
}

// PVIdentity names a CSI PersistentVolume's driver and handle from the informer cache
// (cached.Lookups); false when the volume is not cached.
type PVIdentity interface {
	PVCSIIdentity(pvName string) (driver, handle string, ok bool)
}

// Read rebuilds the node's actual state from the VolumeAttachment cache, the creates the
// cache has not shown yet, and the in-tree attachments (learned from the node's
// status.volumesAttached, so a restart or a takeover from another controller keeps them).
// Memory reads the store and its expectations in one step (memory.NodeAttachments), so a
// VolumeAttachment the informer delivers meanwhile is in one of the two, never in neither.
func Read(mem *memory.Memory, pvs PVIdentity, node *v1.Node) []*Attachment {
	view := mem.NodeAttachments(node)
	atts := make([]*Attachment, 0, len(view.VolumeAttachments)+len(view.InTree))
	for _, v := range view.VolumeAttachments {
		atts = append(atts, vaAttachment(pvs, v.VA, v.DeleteRequested, node))
	}
	for _, it := range view.InTree {
		it := it
		atts = append(atts, &Attachment{InTree: &it, UniqueName: it.Volume.UniqueName, Attached: true, SourceKey: memory.InTreeKey(it.Volume.UniqueName)})
	}
	return atts
}

func vaAttachment(pvs PVIdentity, va *storagev1.VolumeAttachment, deleteRequested bool, node *v1.Node) *Attachment {
	a := &Attachment{
		VA:        va,
		Driver:    va.Spec.Attacher,
		SourceKey: memory.SourceKey(va),
		Attached:  va.Status.Attached,
		Deleting:  va.DeletionTimestamp != nil || deleteRequested,
	}
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		a.PVName = *src.PersistentVolumeName
		if driver, handle, ok := pvs.PVCSIIdentity(a.PVName); ok && driver == va.Spec.Attacher {
			a.UniqueName = migration.CSIUniqueName(driver, handle)
		} else {
			// The PersistentVolume is gone (or no longer names this driver): the node's own
			// lists still say which volume the object attaches.
			a.UniqueName = UniqueNameOnNode(va, node)
		}
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		a.UniqueName = migration.CSIUniqueName(va.Spec.Attacher, src.InlineVolumeSpec.CSI.VolumeHandle)
	}
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
	prefix := migration.CSIUniqueName(va.Spec.Attacher, "") // <plugin>/<driver>^
	match := func(name string) bool {
		handle, ok := strings.CutPrefix(name, prefix)
		return ok && migration.VolumeAttachmentName(handle, va.Spec.Attacher, node.Name) == va.Name
	}
	for _, av := range node.Status.VolumesAttached {
		if match(string(av.Name)) {
			return string(av.Name)
		}
	}
	for _, u := range node.Status.VolumesInUse {
		if match(string(u)) {
			return string(u)
		}
	}
	return ""
}
