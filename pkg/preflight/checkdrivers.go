package preflight

import (
	"fmt"
	"slices"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// checkDrivers runs the per-driver checks of every step that moves towards CSI: the
// CSIDriver object (attachRequired's default without one) and its lifecycle modes.
func (w *world) checkDrivers() {
	for _, s := range w.steps {
		if s.To == migration.ModeOff {
			continue
		}
		w.checkCSIDriverObject(s)
		w.checkLifecycleModes(s)
	}
}

// checkCSIDriverObject: without a CSIDriver where --driver-info-source looks, attachRequired
// takes the source's default for a missing object (attach required, for every source).
func (w *world) checkCSIDriverObject(s Step) {
	src := w.after.DriverSource
	if src == "" {
		src = migration.DriverSourceCSIDriver
	}
	v1 := w.idx.CSIDriver(s.Driver)
	seed := w.idx.SeedCSIDriver(s.Driver)
	switch src {
	case migration.DriverSourceCSIDriver:
		if v1 != nil {
			return
		}
	case migration.DriverSourceSeed:
		if seed != nil {
			return
		}
	default:
		if v1 != nil || seed != nil {
			return
		}
	}
	a := migration.DriverAttachRequired(src, w.idx, s.Driver)
	defaults := "without an object attachRequired defaults to true whatever --driver-info-source says (an existing object that leaves it unset means true in storage.k8s.io/v1 but false in the seed API csi.storage.k8s.io/v1alpha1)"
	w.add(Finding{Severity: Warns, Check: CheckNoCSIDriver, Plugin: s.Plugin, Object: Object{Kind: "CSIDriver", Name: s.Driver},
		Why: fmt.Sprintf("%s (--driver-info-source=%s): %s, so adc creates a VolumeAttachment for every volume of %s it sends through the driver, and the kubelet mounts them in the Persistent lifecycle mode only; a missing CSIDriver often means the driver is not installed",
			a.Evidence, src, defaults, s.Plugin),
		Fix: "install " + s.Driver + " with its CSIDriver object (its manifests or Helm chart create it); if the driver needs no attach, set attachRequired: false in it"})
}

// checkLifecycleModes: the kubelet mounts every migrated volume, inline ones included, as a
// translated PersistentVolume, i.e. in the Persistent lifecycle mode; a CSIDriver that lists
// its modes without Persistent makes every such mount fail.
func (w *world) checkLifecycleModes(s Step) {
	d := w.idx.CSIDriver(s.Driver)
	if d == nil || len(d.Spec.VolumeLifecycleModes) == 0 || slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent) {
		return
	}
	pvs := 0
	for i := range w.cl.Objects.PVs {
		if pluginOfPV(&w.cl.Objects.PVs[i]) == s.Plugin {
			pvs++
		}
	}
	inline := 0
	for i := range w.pairs {
		if p := &w.pairs[i]; p.plugin == s.Plugin && p.vol.Inline != nil {
			inline++
		}
	}
	f := Finding{Severity: Warns, Check: CheckLifecycleMode, Plugin: s.Plugin, Object: Object{Kind: "CSIDriver", Name: s.Driver},
		Why: fmt.Sprintf("CSIDriver %q allows the lifecycle modes %v but not Persistent, in which the kubelet mounts every migrated volume of %s, inline ones included (as a translated PersistentVolume): %s and %s of %s in running pods would fail to mount (\"volume mode Persistent not supported by driver\")",
			s.Driver, d.Spec.VolumeLifecycleModes, s.Plugin, count(pvs, "PersistentVolume", "PersistentVolumes"), count(inline, "inline volume", "inline volumes"), s.Plugin),
		Fix: "add Persistent to spec.volumeLifecycleModes of CSIDriver " + s.Driver + " (the field is immutable: recreate the object), or keep " + s.Plugin + " in-tree"}
	if pvs+inline > 0 {
		f.Severity = Blocks
	}
	w.add(f)
}
