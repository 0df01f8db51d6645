package migration

import (
	"strconv"

	storagev1 "k8s.io/api/storage/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
)

// API versions quoted in reasons, so an operator sees which of the two CSIDriver APIs decided.
const (
	v1APIVersion   = "storage.k8s.io/v1"
	seedAPIVersion = seedcsidriver.GroupName + "/" + seedcsidriver.Version
)

// DriverAttach is the answer of the driver-info source for one CSI driver, with the evidence
// Decide quotes in its reason.
type DriverAttach struct {
	// Required is true when the driver's volumes need a VolumeAttachment.
	Required bool
	// Invalid is true when the source itself is not valid; Required is then meaningless and
	// Decide returns an error decision.
	Invalid bool
	// Evidence names the object that decided (kind, API version, name) and the value of
	// attachRequired, e.g. `CSIDriver "d" (storage.k8s.io/v1) has attachRequired=false`, or
	// says that no object exists where the source looked.
	Evidence string
	// Note is set when auto found both objects and they disagree, so an operator learns that
	// the seed object is ignored.
	Note string
}

// DriverAttachRequired asks the configured driver-info source whether driver needs attach.
// It implements this decision table (absent: no object; unset: no attachRequired):
//
//	source     object used                          absent  unset  true  false
//	csidriver  storage.k8s.io/v1                    attach  attach attach no
//	seed       csi.storage.k8s.io/v1alpha1          attach  no     attach no
//	auto       v1 if it exists, else the seed one   attach  (as the object used)
//
// It is pure: drivers may be nil (no objects at all) and nothing is modified.
func DriverAttachRequired(source DriverSource, drivers DriverLookup, driver string) DriverAttach {
	var v1 *storagev1.CSIDriver
	var seed *seedcsidriver.CSIDriver
	if drivers != nil {
		if source != DriverSourceSeed {
			v1 = drivers.CSIDriver(driver)
		}
		if source.ReadsSeed() {
			seed = drivers.SeedCSIDriver(driver)
		}
	}
	q := strconv.Quote(driver)
	switch source {
	case DriverSourceCSIDriver, "":
		if v1 == nil {
			return DriverAttach{Required: true, Evidence: "no CSIDriver " + q + " exists in " + v1APIVersion + ", which means attach is required"}
		}
		return fromV1CSIDriver(v1)
	case DriverSourceSeed:
		if seed == nil {
			return DriverAttach{Required: true, Evidence: "no CSIDriver " + q + " exists in " + seedAPIVersion + ", which means attach is required"}
		}
		return fromSeedCSIDriver(seed)
	case DriverSourceAuto:
		switch {
		case v1 != nil && seed != nil:
			a := fromV1CSIDriver(v1)
			if s := fromSeedCSIDriver(seed); s.Required != a.Required {
				a.Note = s.Evidence + " but is ignored: --driver-info-source=auto prefers the " + v1APIVersion + " object, which says attachRequired=" +
					strconv.FormatBool(a.Required) + "; delete one of them if they should not disagree"
			}
			return a
		case v1 != nil:
			return fromV1CSIDriver(v1)
		case seed != nil:
			return fromSeedCSIDriver(seed)
		}
		return DriverAttach{Required: true, Evidence: "no CSIDriver " + q + " exists in " + v1APIVersion + " or " + seedAPIVersion + ", which means attach is required"}
	default:
		return DriverAttach{Invalid: true, Evidence: "driver info source " + strconv.Quote(string(source)) + " is not valid, so adc cannot tell whether CSI driver " + q +
			" needs attach; set --driver-info-source to one of " + joinDriverSources()}
	}
}

// fromV1CSIDriver applies the storage.k8s.io/v1 rule: unset means attach is required.
func fromV1CSIDriver(d *storagev1.CSIDriver) DriverAttach {
	obj := "CSIDriver \"" + d.Name + "\" (" + v1APIVersion + ")"
	switch {
	case d.Spec.AttachRequired == nil:
		return DriverAttach{Required: true, Evidence: obj + " does not set attachRequired, which means attachRequired=true in " + v1APIVersion}
	case *d.Spec.AttachRequired:
		return DriverAttach{Required: true, Evidence: obj + " has attachRequired=true"}
	default:
		return DriverAttach{Required: false, Evidence: obj + " has attachRequired=false"}
	}
}

// fromSeedCSIDriver applies the csi.storage.k8s.io/v1alpha1 rule: unset means no attach.
func fromSeedCSIDriver(d *seedcsidriver.CSIDriver) DriverAttach {
	obj := "CSIDriver \"" + d.Name + "\" (" + seedAPIVersion + ")"
	switch {
	case d.Spec.AttachRequired == nil:
		return DriverAttach{Required: false, Evidence: obj + " does not set attachRequired, which means attachRequired=false in " + seedAPIVersion}
	case *d.Spec.AttachRequired:
		return DriverAttach{Required: true, Evidence: obj + " has attachRequired=true"}
	default:
		return DriverAttach{Required: false, Evidence: obj + " has attachRequired=false"}
	}
}
