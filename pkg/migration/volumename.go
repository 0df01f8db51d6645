package migration

import (
	storagev1 "k8s.io/api/storage/v1"
)

// A volume is its unique volume name everywhere in adc, as in the kubelet and upstream's
// attach/detach controller: kubernetes.io/csi/<driver>^<handle> for every volume that has a
// CSI identity (native, or an in-tree volume after translation, whatever mechanism attaches
// it), else the in-tree plugin's <plugin>/<volume id>. Two PersistentVolumes naming one disk,
// an in-tree and a CSI PersistentVolume of the same disk, and a PersistentVolume re-created
// for a disk still attached all name one volume. The functions below are the only way adc
// computes that name; a PersistentVolume's and a VolumeAttachment's names are attributes.

// VolumeName is the unique volume name of the volume d decided, whatever its mechanism; empty
// when the decision could not identify the volume (an error before translation).
func VolumeName(d *Decision) string {
	switch {
	case d.Driver != "" && d.VolumeHandle != "":
		return CSIUniqueName(d.Driver, d.VolumeHandle)
	case d.InTreeUniqueName != "":
		return d.InTreeUniqueName
	case d.Mechanism == MechanismInTree:
		return d.UniqueName
	}
	return ""
}

// PVIdentityLookup names a PersistentVolume's CSI driver and handle (translated for an in-tree
// PersistentVolume); false when the volume is not known or has no CSI identity.
type PVIdentityLookup interface {
	PVCSIIdentity(pvName string) (driver, handle string, ok bool)
}

// VolumeOfAttachment names the volume a VolumeAttachment attaches: from its inline spec, or
// from its PersistentVolume (pvs). false when neither names it: the PersistentVolume is gone
// (deleted while attached), not cached yet, or names another driver. VolumeAttachmentIsFor
// still recognises such an object exactly.
func VolumeOfAttachment(va *storagev1.VolumeAttachment, pvs PVIdentityLookup) (string, bool) {
	switch src := va.Spec.Source; {
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		if h := src.InlineVolumeSpec.CSI.VolumeHandle; h != "" && va.Spec.Attacher != "" {
			return CSIUniqueName(va.Spec.Attacher, h), true
		}
	case src.PersistentVolumeName != nil && pvs != nil:
		if driver, handle, ok := pvs.PVCSIIdentity(*src.PersistentVolumeName); ok && driver == va.Spec.Attacher {
			return CSIUniqueName(driver, handle), true
		}
	}
	return "", false
}

// VolumeAttachmentIsFor reports whether va is the VolumeAttachment of the CSI volume named
// unique on va's node: its attacher is the volume's driver and its name is the one the
// kubelet derives from handle, driver and node (VolumeAttachmentName). It needs neither the
// object's PersistentVolume nor the node's status, so an object whose PersistentVolume is
// gone is still named exactly.
func VolumeAttachmentIsFor(va *storagev1.VolumeAttachment, unique string) bool {
	driver, handle, ok := ParseCSIUniqueName(unique)
	return ok && va.Spec.Attacher == driver && VolumeAttachmentName(handle, driver, va.Spec.NodeName) == va.Name
}
