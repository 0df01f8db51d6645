package plan

import (
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// NodeLossVolume is one volume attached to (or needed on) a node that is not Ready, and what
// its detach rule will do with it: detach it now on evidence, at a time when a timeout runs
// out, or hold it (a DetachPolicy with no timeout). Operators read it before the detach.
type NodeLossVolume struct {
	Node   string `json:"node"`
	Pod    string `json:"pod,omitempty"`
	Volume string `json:"volume,omitempty"`
	PV     string `json:"pv,omitempty"`
	// UniqueName is the name node status lists the volume under, when the pair has none.
	UniqueName string `json:"uniqueName,omitempty"`
	// Rule is the DetachPolicy that decides, or "built-in" (upstream's rule).
	Rule string `json:"rule"`
	// DetachNow: accepted evidence allows the detach now (Evidence says which).
	DetachNow bool               `json:"detachNow"`
	Evidence  migration.Evidence `json:"evidence,omitempty"`
	// DetachAt is when the rule's timeout allows the detach; absent when none will.
	DetachAt *time.Time `json:"detachAt,omitempty"`
	// Held: the policy keeps the volume attached until evidence comes.
	Held   bool   `json:"held"`
	Reason string `json:"reason"`
}

// Name names the row's volume: the pod's volume, else the PV, else the name node status
// lists.
func (n NodeLossVolume) Name() string {
	switch {
	case n.Pod != "":
		return n.Pod + " " + n.Volume
	case n.PV != "":
		return n.PV
	}
	return n.UniqueName
}

// NodeLossOf turns a rule's verdict into a row.
func NodeLossOf(v *migration.DetachVerdict) NodeLossVolume {
	n := NodeLossVolume{Rule: v.Rule, DetachNow: v.Force, Held: v.Held, Reason: v.Reason}
	if v.Force {
		n.Evidence = v.Evidence
	}
	if at := v.At; !v.Force && !at.IsZero() {
		n.DetachAt = &at
	}
	return n
}

// NodeLossFromObjects lists, from listed objects, every volume node status shows attached to
// a managed node that is not Ready, with its rule's verdict (adc status, adc plan).
func NodeLossFromObjects(objs migration.Objects, policies []detachv1alpha1.DetachPolicy, maxWait time.Duration, now time.Time) []NodeLossVolume {
	out := []NodeLossVolume{}
	var rules *migration.DetachPolicies
	byUnique := map[string]*v1.PersistentVolume{}
	for i := range objs.Nodes {
		node := &objs.Nodes[i]
		if !migration.IsManagedNode(node) || migration.NotReadySince(node).IsZero() || len(node.Status.VolumesAttached) == 0 {
			continue
		}
		if rules == nil {
			ptrs := make([]*detachv1alpha1.DetachPolicy, len(policies))
			for j := range policies {
				ptrs[j] = &policies[j]
			}
			rules = migration.CompileDetachPolicies(ptrs, maxWait)
			for j := range objs.PVs {
				pv := &objs.PVs[j]
				if driver, handle, ok := migration.PVCSIIdentity(pv); ok {
					byUnique[migration.CSIUniqueName(driver, handle)] = pv
				}
			}
		}
		for _, av := range node.Status.VolumesAttached {
			unique := string(av.Name)
			pv := byUnique[unique]
			driver, plugin := "", ""
			if d, _, ok := migration.ParseCSIUniqueName(unique); ok {
				driver = d
			} else if i := strings.LastIndex(unique, "/"); i > 0 {
				plugin = unique[:i] // <plugin>/<volume id>; the plugin is kubernetes.io/<name>
			}
			v := rules.For(migration.DetachVolumeOf(pv, driver, plugin)).Verdict(node, now)
			n := NodeLossOf(&v)
			n.Node, n.UniqueName = node.Name, unique
			if pv != nil {
				n.PV = pv.Name
			}
			out = append(out, n)
		}
	}
	SortNodeLoss(out)
	return out
}

// SortNodeLoss orders rows by node, then PV, then unique name.
func SortNodeLoss(out []NodeLossVolume) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		if out[i].PV != out[j].PV {
			return out[i].PV < out[j].PV
		}
		return out[i].UniqueName < out[j].UniqueName
	})
}
