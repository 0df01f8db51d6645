package rollout

import (
	"sort"

	"github.com/migration-aware/adc/pkg/migration"
)

// Readiness says whether switching a plugin's migration mode to complete is safe now, and
// if not, what blocks it. With complete adc stops asking nodes and sends every volume of the
// plugin through CSI, so a node whose kubelet still expects the in-tree plugin would get a
// volume it cannot mount. For a plugin already complete the same node list is version skew:
// kubelets that lag behind the controller.
type Readiness struct {
	// Ready is true when every managed node reports the plugin migrated and no volume of
	// the plugin would change path; `adc status --check-complete` exits 0 only then.
	Ready bool `json:"ready"`
	// NodesNotMigrated are the managed nodes that have not reported the plugin migrated
	// (not migrated, or not reported at all), sorted by node name.
	NodesNotMigrated []NodeBlocker `json:"nodesNotMigrated"`
	// VolumesChangingPath are the pairs of the plugin that would go through CSI if the mode
	// were switched to complete now, sorted by node, pod and volume; always empty for a
	// plugin already complete.
	VolumesChangingPath []PathChange `json:"volumesChangingPath"`
}

// NodeBlocker is a managed node that has not reported a plugin migrated.
type NodeBlocker struct {
	// Node is the node name.
	Node string `json:"node"`
	// State is not-migrated (its kubelet uses the in-tree plugin) or unknown (no CSINode or
	// CSINodeInfo yet, so it has said nothing).
	State string `json:"state"`
}

// PathChange is a pair whose volume would move from its current mechanism to CSI.
type PathChange struct {
	// Node, Pod ("namespace/name") and Volume (the pod's volume name) identify the pair.
	Node   string `json:"node"`
	Pod    string `json:"pod"`
	Volume string `json:"volume"`
	// PV is the bound PersistentVolume, or empty (inline volume).
	PV string `json:"pv"`
	// From is the pair's mechanism now (in-tree, not-attachable, wait or error); after the
	// switch it would be csi.
	From migration.Mechanism `json:"from"`
}

// pairFacts is what the per-plugin tallies need of one (pod volume, node) pair, from either
// a controller snapshot or a cluster computation.
type pairFacts struct {
	node, pod, volume, pv, plugin string
	mechanism                     migration.Mechanism
	held                          bool
}

// tallyPlugins fills each plugin's volume paths and readiness from the nodes' states and the
// pairs of active pods on managed nodes. A pair changes path when its volume is an in-tree
// volume of the plugin, it does not go through CSI now, and its node has not reported the
// plugin migrated: exactly the pairs the complete mode would send through CSI against the
// kubelet's expectation.
func tallyPlugins(plugins []PluginRollout, states nodeStates, pairs []pairFacts) {
	byPlugin := make(map[string]*PluginRollout, len(plugins))
	for i := range plugins {
		pr := &plugins[i]
		byPlugin[pr.Plugin] = pr
		pr.Readiness = Readiness{NodesNotMigrated: []NodeBlocker{}, VolumesChangingPath: []PathChange{}}
		for node, perPlugin := range states {
			if st := perPlugin[pr.Plugin]; st != migration.NodeStateMigrated {
				pr.Readiness.NodesNotMigrated = append(pr.Readiness.NodesNotMigrated, NodeBlocker{Node: node, State: st.String()})
			}
		}
		sort.Slice(pr.Readiness.NodesNotMigrated, func(a, b int) bool {
			return pr.Readiness.NodesNotMigrated[a].Node < pr.Readiness.NodesNotMigrated[b].Node
		})
	}
	for i := range pairs {
		f := &pairs[i]
		pr := byPlugin[f.plugin]
		if pr == nil {
			continue // not an in-tree volume of a migratable plugin
		}
		path := pathOf(f.mechanism, f.held)
		pr.VolumesByPath.add(path)
		if pr.Mode != migration.ModeComplete && !goesThroughCSI(f.mechanism) && states.state(f.node, f.plugin) != migration.NodeStateMigrated {
			pr.Readiness.VolumesChangingPath = append(pr.Readiness.VolumesChangingPath,
				PathChange{Node: f.node, Pod: f.pod, Volume: f.volume, PV: f.pv, From: f.mechanism})
		}
	}
	for i := range plugins {
		rd := &plugins[i].Readiness
		sortPairs(rd.VolumesChangingPath, func(c PathChange) [3]string { return [3]string{c.Node, c.Pod, c.Volume} })
		rd.Ready = len(rd.NodesNotMigrated) == 0 && len(rd.VolumesChangingPath) == 0
	}
}

func goesThroughCSI(m migration.Mechanism) bool {
	return m == migration.MechanismCSI || m == migration.MechanismCSINoAttach
}

// Plugin returns the rollout of the named plugin, or false when the report has none (the
// name is not a migratable in-tree plugin).
func (r Report) Plugin(name string) (PluginRollout, bool) {
	for _, p := range r.Plugins {
		if p.Plugin == name {
			return p, true
		}
	}
	return PluginRollout{}, false
}
