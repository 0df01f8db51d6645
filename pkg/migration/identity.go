package migration

import (
	v1 "k8s.io/api/core/v1"
)

// PVCSIIdentity returns the CSI driver and volume handle of a PersistentVolume: its own for
// native CSI volumes, the translated ones for migratable in-tree volumes. The controller uses
// it to recognise the volume behind an existing VolumeAttachment (whose source names only the
// PV), so ok is false whenever the PV cannot be identified and nothing may be assumed.
func PVCSIIdentity(pv *v1.PersistentVolume) (driver, handle string, ok bool) {
	if pv == nil {
		return "", "", false
	}
	if csi := pv.Spec.CSI; csi != nil {
		return csi.Driver, csi.VolumeHandle, csi.Driver != "" && csi.VolumeHandle != ""
	}
	if !translator.IsPVMigratable(pv) {
		return "", "", false
	}
	translated, err := translate(pv, nil, "")
	if err != nil || translated == nil || translated.Spec.CSI == nil || translated.Spec.CSI.VolumeHandle == "" {
		return "", "", false
	}
	return translated.Spec.CSI.Driver, translated.Spec.CSI.VolumeHandle, true
}
