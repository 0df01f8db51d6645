package adc

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// attachment is one volume attached (or attaching, or detaching) to the node being
// reconciled: a VolumeAttachment for CSI, an in-tree attachment otherwise.
type attachment struct {
	va     *storagev1.VolumeAttachment
	inTree *inTreeAttachment
	// uniqueName is the name node status lists it under; empty when it cannot be known (a
	// VolumeAttachment whose PersistentVolume is gone).
	uniqueName string
	driver     string
	pvName     string
	sourceKey  string
	attached   bool
	// deleting: the VolumeAttachment has a deletion timestamp or adc sent its delete.
	deleting bool
	matched  bool
	// released is the verdict of the DetachPolicy whose evidence (on the cached Node) freed
	// the volume from the node's pods; reconcileDetach confirms it on the fresh Node.
	released *migration.DetachVerdict
}

func (a *attachment) mechanism() migration.Mechanism {
	if a.va != nil {
		return migration.MechanismCSI
	}
	return migration.MechanismInTree
}

// actualAttachments rebuilds the node's actual state from the VolumeAttachment cache, the
// creates the cache has not shown yet, and the in-tree attachments (learned from the node's
// status.volumesAttached, so a restart or a takeover from another controller keeps them).
// Memory reads the store and its expectations in one step (memory.NodeAttachments), so a
// VolumeAttachment the informer delivers meanwhile is in one of the two, never in neither.
func (c *Controller) actualAttachments(node *v1.Node) []*attachment {
	view := c.mem.NodeAttachments(node)
	atts := make([]*attachment, 0, len(view.VolumeAttachments)+len(view.InTree))
	for _, v := range view.VolumeAttachments {
		atts = append(atts, c.vaAttachment(v.VA, v.DeleteRequested, node))
	}
	for _, it := range view.InTree {
		it := it
		atts = append(atts, &attachment{inTree: &it, uniqueName: it.Volume.UniqueName, attached: true, sourceKey: memory.InTreeKey(it.Volume.UniqueName)})
	}
	return atts
}

func (c *Controller) vaAttachment(va *storagev1.VolumeAttachment, deleteRequested bool, node *v1.Node) *attachment {
	a := &attachment{
		va:        va,
		driver:    va.Spec.Attacher,
		sourceKey: memory.SourceKey(va),
		attached:  va.Status.Attached,
		deleting:  va.DeletionTimestamp != nil || deleteRequested,
	}
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		a.pvName = *src.PersistentVolumeName
		if driver, handle, ok := c.lookups.PVCSIIdentity(a.pvName); ok && driver == va.Spec.Attacher {
			a.uniqueName = migration.CSIUniqueName(driver, handle)
		} else {
			// The PersistentVolume is gone (or no longer names this driver): the node's own
			// lists still say which volume the object attaches.
			a.uniqueName = uniqueNameOnNode(va, node)
		}
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		a.uniqueName = migration.CSIUniqueName(va.Spec.Attacher, src.InlineVolumeSpec.CSI.VolumeHandle)
	}
	return a
}

// uniqueNameOnNode finds the unique name of a VolumeAttachment that adc cannot name from its
// PersistentVolume (deleted): the CSI volume of its driver, listed in the node's
// status.volumesAttached or volumesInUse, whose VolumeAttachment name (derived from handle,
// driver and node, as the kubelet derives it) is the object's. Empty when the node lists none.
func uniqueNameOnNode(va *storagev1.VolumeAttachment, node *v1.Node) string {
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

// attachmentIndex finds the existing attachment of a pair's volume under any of its names.
type attachmentIndex struct {
	byVA     map[string]*attachment
	bySource map[string]*attachment
	byUnique map[string]*attachment
}

func indexAttachments(atts []*attachment) attachmentIndex {
	x := attachmentIndex{
		byVA:     make(map[string]*attachment, len(atts)),
		bySource: make(map[string]*attachment, len(atts)),
		byUnique: make(map[string]*attachment, len(atts)),
	}
	for _, a := range atts {
		if a.va != nil {
			x.byVA[a.va.Name] = a
		}
		if a.sourceKey != "" {
			x.bySource[a.sourceKey] = a
		}
		if a.uniqueName != "" {
			x.byUnique[a.uniqueName] = a
		}
	}
	return x
}

// find returns the attachment of the pair's volume, matching the exact VolumeAttachment
// name first, then the unique names of either mechanism, then the volume source (a
// VolumeAttachment of the same PersistentVolume, whatever its driver: the pair may be held
// because its PV cannot be translated any more, and its attachment must be kept).
func (x attachmentIndex) find(id identity) *attachment {
	if a := x.byVA[id.vaName]; a != nil && id.vaName != "" {
		return a
	}
	if a := x.byUnique[id.csiUnique]; a != nil && id.csiUnique != "" {
		return a
	}
	if a := x.byUnique[id.inTreeUnique]; a != nil && id.inTreeUnique != "" {
		return a
	}
	if a := x.bySource[id.sourceKey]; a != nil && id.sourceKey != "" {
		return a
	}
	return nil
}
