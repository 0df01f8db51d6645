package migration

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
)

// bothAPIs is a DriverLookup holding at most one CSIDriver of each API for the test driver.
type bothAPIs struct {
	v1   *storagev1.CSIDriver
	seed *seedcsidriver.CSIDriver
}

func (b bothAPIs) CSIDriver(name string) *storagev1.CSIDriver {
	if b.v1 != nil && b.v1.Name == name {
		return b.v1
	}
	return nil
}

func (b bothAPIs) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	if b.seed != nil && b.seed.Name == name {
		return b.seed
	}
	return nil
}

const tableDriver = "table.csi.example.com"

// attachField is the state of attachRequired on an object: absent means no object at all.
type attachField int

const (
	absent attachField = iota
	unset
	setTrue
	setFalse
)

func (f attachField) ptr() *bool {
	switch f {
	case setTrue:
		return boolPtr(true)
	case setFalse:
		return boolPtr(false)
	}
	return nil
}

func v1Driver(f attachField) *storagev1.CSIDriver {
	if f == absent {
		return nil
	}
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: tableDriver}, Spec: storagev1.CSIDriverSpec{AttachRequired: f.ptr()}}
}

func seedDriver(f attachField) *seedcsidriver.CSIDriver {
	if f == absent {
		return nil
	}
	return &seedcsidriver.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: tableDriver}, Spec: seedcsidriver.CSIDriverSpec{AttachRequired: f.ptr()}}
}

// The decision table of issue 11. Evidence must name the object that decided (kind, API
// version, name) and the value of attachRequired it stands for.
func TestDriverAttachRequiredTable(t *testing.T) {
	const (
		v1Obj   = `CSIDriver "table.csi.example.com" (storage.k8s.io/v1)`
		seedObj = `CSIDriver "table.csi.example.com" (csi.storage.k8s.io/v1alpha1)`
	)
	for _, tc := range []struct {
		name     string
		source   DriverSource
		v1, seed attachField
		required bool
		evidence []string
		note     []string // empty: no note expected
	}{
		// csidriver (the default): only storage.k8s.io/v1 counts; unset means true.
		{name: "csidriver: no object, attach required", source: DriverSourceCSIDriver, required: true,
			evidence: []string{`no CSIDriver "table.csi.example.com" exists in storage.k8s.io/v1`, "attach is required"}},
		{name: "csidriver: attachRequired unset means true", source: DriverSourceCSIDriver, v1: unset, required: true,
			evidence: []string{v1Obj, "does not set attachRequired", "attachRequired=true in storage.k8s.io/v1"}},
		{name: "csidriver: attachRequired true", source: DriverSourceCSIDriver, v1: setTrue, required: true, evidence: []string{v1Obj + " has attachRequired=true"}},
		{name: "csidriver: attachRequired false", source: DriverSourceCSIDriver, v1: setFalse, required: false, evidence: []string{v1Obj + " has attachRequired=false"}},
		{name: "csidriver: a seed object is ignored", source: DriverSourceCSIDriver, seed: setFalse, required: true, evidence: []string{"storage.k8s.io/v1", "attach is required"}},
		{name: "empty source behaves as csidriver", source: "", v1: setFalse, seed: setTrue, required: false, evidence: []string{v1Obj + " has attachRequired=false"}},

		// seed: only csi.storage.k8s.io/v1alpha1 counts; unset means false.
		{name: "seed: no object, attach required", source: DriverSourceSeed, required: true,
			evidence: []string{`no CSIDriver "table.csi.example.com" exists in csi.storage.k8s.io/v1alpha1`, "attach is required"}},
		{name: "seed: attachRequired unset means false", source: DriverSourceSeed, seed: unset, required: false,
			evidence: []string{seedObj, "does not set attachRequired", "attachRequired=false in csi.storage.k8s.io/v1alpha1"}},
		{name: "seed: attachRequired true", source: DriverSourceSeed, seed: setTrue, required: true, evidence: []string{seedObj + " has attachRequired=true"}},
		{name: "seed: attachRequired false", source: DriverSourceSeed, seed: setFalse, required: false, evidence: []string{seedObj + " has attachRequired=false"}},
		{name: "seed: a v1 object is ignored", source: DriverSourceSeed, v1: setFalse, required: true, evidence: []string{"csi.storage.k8s.io/v1alpha1", "attach is required"}},

		// auto with one object: that object's own rule.
		{name: "auto: no object in either API, attach required", source: DriverSourceAuto, required: true,
			evidence: []string{"exists in storage.k8s.io/v1 or csi.storage.k8s.io/v1alpha1", "attach is required"}},
		{name: "auto: only v1, attachRequired unset means true", source: DriverSourceAuto, v1: unset, required: true, evidence: []string{v1Obj, "attachRequired=true in storage.k8s.io/v1"}},
		{name: "auto: only v1, attachRequired true", source: DriverSourceAuto, v1: setTrue, required: true, evidence: []string{v1Obj + " has attachRequired=true"}},
		{name: "auto: only v1, attachRequired false", source: DriverSourceAuto, v1: setFalse, required: false, evidence: []string{v1Obj + " has attachRequired=false"}},
		{name: "auto: only seed, attachRequired unset means false", source: DriverSourceAuto, seed: unset, required: false, evidence: []string{seedObj, "attachRequired=false in csi.storage.k8s.io/v1alpha1"}},
		{name: "auto: only seed, attachRequired true", source: DriverSourceAuto, seed: setTrue, required: true, evidence: []string{seedObj + " has attachRequired=true"}},
		{name: "auto: only seed, attachRequired false", source: DriverSourceAuto, seed: setFalse, required: false, evidence: []string{seedObj + " has attachRequired=false"}},

		// auto with both objects: v1 wins; a disagreement is noted, an agreement is not.
		{name: "auto: both, v1 false beats seed true", source: DriverSourceAuto, v1: setFalse, seed: setTrue, required: false,
			evidence: []string{v1Obj + " has attachRequired=false"}, note: []string{seedObj + " has attachRequired=true", "ignored", "prefers the storage.k8s.io/v1 object"}},
		{name: "auto: both, v1 true beats seed false", source: DriverSourceAuto, v1: setTrue, seed: setFalse, required: true,
			evidence: []string{v1Obj + " has attachRequired=true"}, note: []string{seedObj + " has attachRequired=false", "ignored"}},
		{name: "auto: both unset disagree, v1 unset (true) beats seed unset (false)", source: DriverSourceAuto, v1: unset, seed: unset, required: true,
			evidence: []string{v1Obj, "attachRequired=true in storage.k8s.io/v1"}, note: []string{seedObj, "attachRequired=false in csi.storage.k8s.io/v1alpha1", "ignored"}},
		{name: "auto: both false agree, no note", source: DriverSourceAuto, v1: setFalse, seed: setFalse, required: false, evidence: []string{v1Obj + " has attachRequired=false"}},
		{name: "auto: both true agree, no note", source: DriverSourceAuto, v1: setTrue, seed: setTrue, required: true, evidence: []string{v1Obj + " has attachRequired=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DriverAttachRequired(tc.source, bothAPIs{v1: v1Driver(tc.v1), seed: seedDriver(tc.seed)}, tableDriver)
			if got.Invalid {
				t.Fatalf("Invalid for a valid source: %+v", got)
			}
			if got.Required != tc.required {
				t.Errorf("Required = %v, want %v (evidence %q)", got.Required, tc.required, got.Evidence)
			}
			for _, s := range tc.evidence {
				if !strings.Contains(got.Evidence, s) {
					t.Errorf("evidence %q does not contain %q", got.Evidence, s)
				}
			}
			if len(tc.note) == 0 && got.Note != "" {
				t.Errorf("unexpected note %q", got.Note)
			}
			for _, s := range tc.note {
				if !strings.Contains(got.Note, s) {
					t.Errorf("note %q does not contain %q", got.Note, s)
				}
			}
		})
	}
}

func TestDriverAttachRequiredWithoutLookupOrWithBadSource(t *testing.T) {
	for _, src := range DriverSources {
		if got := DriverAttachRequired(src, nil, tableDriver); !got.Required || got.Invalid {
			t.Errorf("%s with a nil lookup = %+v, want attach required (no objects at all)", src, got)
		}
	}
	got := DriverAttachRequired("v1alpha1", bothAPIs{v1: v1Driver(setFalse)}, tableDriver)
	if !got.Invalid || !strings.Contains(got.Evidence, "--driver-info-source") || !strings.Contains(got.Evidence, "csidriver, seed, auto") {
		t.Errorf("bad source = %+v, want Invalid with a reason naming the flag and the valid values", got)
	}
}

// The same table through Decide, for a native CSI volume and a migrated in-tree one: the
// mechanism, the VolumeAttachment and the reason `adc plan` shows follow the source.
func TestDecideFollowsDriverInfoSource(t *testing.T) {
	pdDriver := func(f attachField) *seedcsidriver.CSIDriver {
		d := seedDriver(f)
		if d != nil {
			d.Name = gceDriver
		}
		return d
	}
	for _, tc := range []struct {
		name     string
		source   DriverSource
		v1, seed attachField
		want     Mechanism
		reason   []string
		note     string
	}{
		{name: "seed object unset: no attach", source: DriverSourceSeed, seed: unset, want: MechanismCSINoAttach,
			reason: []string{`CSIDriver "table.csi.example.com" (csi.storage.k8s.io/v1alpha1) does not set attachRequired`, "nothing is attached"}},
		{name: "seed object true: VolumeAttachment", source: DriverSourceSeed, seed: setTrue, want: MechanismCSI,
			reason: []string{"(csi.storage.k8s.io/v1alpha1) has attachRequired=true", "a VolumeAttachment is used"}},
		{name: "seed source without a seed object: attach required", source: DriverSourceSeed, v1: setFalse, want: MechanismCSI,
			reason: []string{"no CSIDriver", "csi.storage.k8s.io/v1alpha1"}},
		{name: "csidriver source ignores the seed object", source: DriverSourceCSIDriver, seed: unset, want: MechanismCSI,
			reason: []string{"no CSIDriver", "storage.k8s.io/v1"}},
		{name: "auto falls back to the seed object", source: DriverSourceAuto, seed: setFalse, want: MechanismCSINoAttach,
			reason: []string{"(csi.storage.k8s.io/v1alpha1) has attachRequired=false"}},
		{name: "auto prefers v1 when they disagree", source: DriverSourceAuto, v1: setTrue, seed: setFalse, want: MechanismCSI,
			reason: []string{"(storage.k8s.io/v1) has attachRequired=true"}, note: "ignored"},
		{name: "bad source is an error", source: "v1alpha1", seed: setFalse, want: MechanismError, reason: []string{"--driver-info-source"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgWith(NodeSourceCSINode, gcePlugin, "complete")
			cfg.DriverSource = tc.source
			native := Decide(cfg, &Input{PV: csiPV("pv-csi", tableDriver, "h1"), NodeName: testNode,
				CSIDrivers: bothAPIs{v1: v1Driver(tc.v1), seed: seedDriver(tc.seed)}})
			check := func(what string, d Decision, driver string) {
				t.Helper()
				if d.Mechanism != tc.want {
					t.Errorf("%s: mechanism %s, want %s (reason %q)", what, d.Mechanism, tc.want, d.Reason)
				}
				if (d.VolumeAttachmentName != "") != (tc.want == MechanismCSI) {
					t.Errorf("%s: VolumeAttachmentName %q for mechanism %s", what, d.VolumeAttachmentName, d.Mechanism)
				}
				for _, s := range tc.reason {
					s = strings.ReplaceAll(s, tableDriver, driver)
					if !strings.Contains(d.Reason, s) {
						t.Errorf("%s: reason %q does not contain %q", what, d.Reason, s)
					}
				}
				if tc.note != "" && !strings.Contains(strings.Join(d.Notes, "\n"), tc.note) {
					t.Errorf("%s: notes %q lack %q", what, d.Notes, tc.note)
				}
			}
			check("native CSI volume", native, tableDriver)

			v1 := v1Driver(tc.v1)
			if v1 != nil {
				v1.Name = gceDriver
			}
			migrated := Decide(cfg, &Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode,
				CSIDrivers: bothAPIs{v1: v1, seed: pdDriver(tc.seed)}})
			check("migrated gce-pd volume", migrated, gceDriver)
		})
	}
}
