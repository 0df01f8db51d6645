package preflight

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// checkStorageClasses translates every StorageClass of a moving plugin's in-tree provisioner
// as the external-provisioner would after migration, and reports the classes
// csi-translation-lib rejects (blocks: their claims could not be provisioned) or whose
// parameters it drops (warns), with the class the driver would get.
func (w *world) checkStorageClasses() {
	for _, s := range w.steps {
		if s.To == migration.ModeOff {
			continue
		}
		for i := range w.cl.StorageClasses {
			sc := &w.cl.StorageClasses[i]
			if sc.Provisioner == s.Plugin {
				w.checkClass(sc, s)
			}
		}
	}
}

func (w *world) checkClass(sc *storagev1.StorageClass, s Step) {
	obj := Object{Kind: "StorageClass", Name: sc.Name}
	out, err := translateClass(s.Plugin, sc)
	if err != nil {
		w.add(Finding{Severity: Blocks, Check: CheckStorageClass, Plugin: s.Plugin, Object: obj,
			Why: fmt.Sprintf("csi-translation-lib rejects StorageClass %q: %v; once %s is migrated, claims of this class cannot be provisioned through %s", sc.Name, err, s.Plugin, s.Driver),
			Fix: "fix the class (e.g. set either the zone/zones parameters or allowedTopologies, not both) or create a StorageClass of provisioner " + s.Driver + " and move new claims to it"})
		return
	}
	dropped := droppedParameters(s.Plugin, sc)
	if len(dropped) == 0 {
		return
	}
	w.add(Finding{Severity: Warns, Check: CheckStorageClass, Plugin: s.Plugin, Object: obj,
		Why: fmt.Sprintf("csi-translation-lib drops the parameter(s) %s of StorageClass %q: the class %s gets after migration does not carry them, so its new volumes are provisioned without those settings",
			strings.Join(dropped, ", "), sc.Name, s.Driver),
		Fix:          "check whether " + s.Driver + " offers these settings under its own parameter names and create a StorageClass of provisioner " + s.Driver + " with them for new claims, or accept the driver's defaults",
		StorageClass: translatedClass(s.Driver, out)})
}

// droppedParameters returns, sorted, the parameters of sc that change nothing in its
// translation: csi-translation-lib drops them. The library is asked parameter by parameter
// (without allowedTopologies, which some parameters conflict with), so a parameter it moves
// elsewhere (fstype, zone into allowedTopologies, a renamed key) counts as kept.
func droppedParameters(plugin string, sc *storagev1.StorageClass) []string {
	bare := sc.DeepCopy()
	bare.Parameters, bare.AllowedTopologies = nil, nil
	base, err := translateClass(plugin, bare)
	if err != nil {
		return nil
	}
	var dropped []string
	for k, v := range sc.Parameters {
		one := bare.DeepCopy()
		one.Parameters = map[string]string{k: v}
		got, err := translateClass(plugin, one)
		if err != nil {
			continue // rejected alone: not dropped
		}
		if sameParameters(got.Parameters, base.Parameters) && strings.Join(topologies(got.AllowedTopologies), ";") == strings.Join(topologies(base.AllowedTopologies), ";") {
			dropped = append(dropped, k)
		}
	}
	sort.Strings(dropped)
	return dropped
}

func sameParameters(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return maps.Equal(a, b)
}

// translatedClass renders a translated StorageClass for a finding.
func translatedClass(driver string, sc *storagev1.StorageClass) *TranslatedClass {
	params := map[string]string{}
	maps.Copy(params, sc.Parameters)
	return &TranslatedClass{Provisioner: driver, Parameters: params, AllowedTopologies: topologies(sc.AllowedTopologies)}
}

// topologies renders topology terms as "key in (v1, v2)" expressions, one string per term.
func topologies(terms []v1.TopologySelectorTerm) []string {
	var out []string
	for _, t := range terms {
		var exprs []string
		for _, e := range t.MatchLabelExpressions {
			exprs = append(exprs, e.Key+" in ("+strings.Join(e.Values, ", ")+")")
		}
		out = append(out, strings.Join(exprs, " and "))
	}
	return out
}
