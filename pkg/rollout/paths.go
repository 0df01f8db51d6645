package rollout

import "github.com/migration-aware/adc/pkg/migration"

// VolumePaths counts one plugin's (pod volume, node) pairs by the path their data takes, so
// "1,840 of 2,000 gce-pd volumes already go through CSI" is one glance. Only pairs whose
// volume is an in-tree volume of the plugin count (native CSI volumes have no in-tree plugin).
type VolumePaths struct {
	// CSI counts pairs attached (or mounted, for csi-no-attach) through the plugin's CSI
	// driver: mechanisms csi and csi-no-attach.
	CSI int `json:"csi"`
	// InTree counts pairs on the in-tree plugin that are not held: mechanisms in-tree and
	// not-attachable.
	InTree int `json:"inTree"`
	// Held counts pairs adc neither attaches nor detaches: wait, error, and (controller
	// source) in-tree pairs without an in-tree attacher; the same pairs the held list shows.
	Held int `json:"held"`
	// Total is CSI + InTree + Held.
	Total int `json:"total"`
}

// PathName is the path label of a pair's volume, shared by VolumePaths, the
// adc_migration_volumes metric and the text output. The values are part of the API.
type PathName string

const (
	// PathCSI: through the CSI driver.
	PathCSI PathName = "csi"
	// PathInTree: through the in-tree plugin.
	PathInTree PathName = "in-tree"
	// PathHeld: neither, until the cause is fixed.
	PathHeld PathName = "held"
)

// Paths lists every path in display order; a metric carries all three, zeros included.
var Paths = []PathName{PathCSI, PathInTree, PathHeld}

// pathOf classifies a pair: held wins over the mechanism, so an in-tree pair the controller
// holds (no in-tree attacher) counts as held as it does in the held list.
func pathOf(mech migration.Mechanism, held bool) PathName {
	switch {
	case held || mech == migration.MechanismWait || mech == migration.MechanismError:
		return PathHeld
	case mech == migration.MechanismCSI || mech == migration.MechanismCSINoAttach:
		return PathCSI
	}
	return PathInTree
}

// add counts one pair on path.
func (v *VolumePaths) add(path PathName) {
	switch path {
	case PathCSI:
		v.CSI++
	case PathInTree:
		v.InTree++
	default:
		v.Held++
	}
	v.Total++
}

// Count returns the number of pairs on path, for the metrics and the page.
func (v VolumePaths) Count(path PathName) int {
	switch path {
	case PathCSI:
		return v.CSI
	case PathInTree:
		return v.InTree
	case PathHeld:
		return v.Held
	}
	return 0
}
