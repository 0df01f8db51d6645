package preflight

import (
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	csitrans "k8s.io/csi-translation-lib"
)

// translator is csi-translation-lib's stateless translator; every translation a preflight
// shows is the library's own, as the controller, the external-provisioner, the
// external-attacher and the kubelet all use it.
var translator = csitrans.New()

// driverOf returns the CSI driver that replaces an in-tree plugin, or "".
func driverOf(plugin string) string {
	d, err := translator.GetCSINameFromInTreeName(plugin)
	if err != nil {
		return ""
	}
	return d
}

// pluginOfPV returns the in-tree plugin of a migratable PersistentVolume, or "".
func pluginOfPV(pv *v1.PersistentVolume) string {
	if pv == nil || pv.Spec.CSI != nil || !translator.IsPVMigratable(pv) {
		return ""
	}
	p, err := translator.GetInTreePluginNameFromSpec(pv, nil)
	if err != nil {
		return ""
	}
	return p
}

// translatePV translates a PersistentVolume (a copy: the library modifies its input's copy
// only, but a panic must not take the caller down).
func translatePV(pv *v1.PersistentVolume) (out *v1.PersistentVolume, err error) {
	defer recoverInto(&err)
	out, err = translator.TranslateInTreePVToCSI(logr.Discard(), pv.DeepCopy())
	if err == nil && (out == nil || out.Spec.CSI == nil) {
		err = fmt.Errorf("the translation has no CSI source")
	}
	return out, err
}

// translateInline translates a pod's inline volume.
func translateInline(vol *v1.Volume, podNamespace string) (out *v1.PersistentVolume, err error) {
	defer recoverInto(&err)
	out, err = translator.TranslateInTreeInlineVolumeToCSI(logr.Discard(), vol.DeepCopy(), podNamespace)
	if err == nil && (out == nil || out.Spec.CSI == nil) {
		err = fmt.Errorf("the translation has no CSI source")
	}
	return out, err
}

// translateClass translates a StorageClass of the plugin's provisioner.
func translateClass(plugin string, sc *storagev1.StorageClass) (out *storagev1.StorageClass, err error) {
	defer recoverInto(&err)
	return translator.TranslateInTreeStorageClassToCSI(logr.Discard(), plugin, sc.DeepCopy())
}

func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("csi-translation-lib failed unexpectedly (%v)", r)
	}
}
