package rollout

import (
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// attachedIndex says, from VolumeAttachments and nodes' status.volumesAttached, on which
// nodes a volume is attached, for the multi-attach check of a cluster report.
type attachedIndex struct {
	byPV     map[string][]string // PV name -> nodes with a VolumeAttachment of it
	byUnique map[string][]string // unique volume name -> nodes listing it in status
	vaNames  map[string]bool
}

func newAttachedIndex(nodes []v1.Node, vas []attachmentRef) *attachedIndex {
	x := &attachedIndex{byPV: map[string][]string{}, byUnique: map[string][]string{}, vaNames: map[string]bool{}}
	for _, va := range vas {
		x.vaNames[va.name] = true
		if va.pv != "" {
			x.byPV[va.pv] = append(x.byPV[va.pv], va.node)
		}
	}
	for i := range nodes {
		for _, av := range nodes[i].Status.VolumesAttached {
			x.byUnique[string(av.Name)] = append(x.byUnique[string(av.Name)], nodes[i].Name)
		}
	}
	return x
}

// blockedBy returns another node the volume of decision d is attached to when the volume
// does not allow multi-attach and is not attached to node yet; "" otherwise.
func (x *attachedIndex) blockedBy(d *migration.Decision, pvName, node string) string {
	if d.MultiAttachAllowed || (d.Mechanism != migration.MechanismCSI && d.Mechanism != migration.MechanismInTree) {
		return ""
	}
	if d.VolumeAttachmentName != "" && x.vaNames[d.VolumeAttachmentName] {
		return ""
	}
	var candidates []string
	if pvName != "" {
		candidates = append(candidates, x.byPV[pvName]...)
	}
	names := migration.NamesOf(d, node)
	for _, u := range []string{d.UniqueName, names.InTreeUnique, names.CSIUnique} {
		if u != "" {
			candidates = append(candidates, x.byUnique[u]...)
		}
	}
	other := ""
	for _, n := range candidates {
		if n == node {
			return "" // already attached here (by another mechanism, or status lists it)
		}
		if other == "" || n < other {
			other = n
		}
	}
	return other
}

// sortPairs sorts by node, pod and volume, the order of the controller's snapshot.
func sortPairs[T any](s []T, key func(T) [3]string) {
	sort.SliceStable(s, func(i, j int) bool {
		a, b := key(s[i]), key(s[j])
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
}
