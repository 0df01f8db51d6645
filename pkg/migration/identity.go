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
		return CSISourceIdentity(csi)
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

// CSISourceIdentity is PVCSIIdentity of a PersistentVolume whose source is this CSI source.
func CSISourceIdentity(csi *v1.CSIPersistentVolumeSource) (driver, handle string, ok bool) {
	return csi.Driver, csi.VolumeHandle, csi.Driver != "" && csi.VolumeHandle != ""
}

// MigratedPluginOf returns the in-tree plugin a VolumeAttachment's volume was migrated from:
// the plugin of its in-tree PersistentVolume, or, for an inline volume (whose attachment
// carries only the translated spec), the plugin the CSI driver replaces. ok is false for a
// native CSI volume or when the PV is not known. Metrics label migrated volumes with it, as
// upstream does.
func MigratedPluginOf(pv *v1.PersistentVolume, inline bool, driver string) (string, bool) {
	if inline {
		plugin, err := translator.GetInTreeNameFromCSIName(driver)
		return plugin, err == nil && plugin != ""
	}
	if pv == nil || pv.Spec.CSI != nil || !translator.IsPVMigratable(pv) {
		return "", false
	}
	plugin, err := translator.GetInTreePluginNameFromSpec(pv, nil)
	return plugin, err == nil && plugin != ""
}
