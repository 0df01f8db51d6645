package rollout

import (
	"fmt"
	"sort"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// NodeRollout is one managed node as the node view (/nodes, /api/v1/nodes, `adc status
// --nodes`) shows it: which kubelet, what it reports and from which object, and how its
// volumes are attached, so an operator can name the nodes behind a plugin's bar.
type NodeRollout struct {
	// Name is the node name.
	Name string `json:"name"`
	// KubeletVersion is the Node's status.nodeInfo.kubeletVersion, or "" when unknown.
	KubeletVersion string `json:"kubeletVersion"`
	// Source is the object the node source read: CSINode, CSINodeInfo, or none (the node
	// has not reported: every plugin is unknown).
	Source string `json:"source"`
	// MigratedPlugins are the in-tree plugins the node reports migrated, sorted.
	MigratedPlugins []string `json:"migratedPlugins"`
	// States has every migratable plugin's state on the node: migrated, not-migrated or
	// unknown.
	States map[string]string `json:"states"`
	// VolumesByMechanism counts the node's (pod volume, node) pairs per mechanism; all six
	// mechanisms are present.
	VolumesByMechanism map[migration.Mechanism]int `json:"volumesByMechanism"`
}

// Node sources as NodeRollout.Source shows them.
const (
	NodeObjectCSINode     = "CSINode"
	NodeObjectCSINodeInfo = "CSINodeInfo"
	NodeObjectNone        = "none"
)

// NodeFilter selects nodes of the node view. Plugin alone keeps every node (the states
// column then shows that plugin); Plugin with State keeps the nodes in that state for it.
type NodeFilter struct {
	// Plugin is a migratable in-tree plugin, or "" for all.
	Plugin string `json:"plugin"`
	// State is migrated, not-migrated or unknown (not reported), or "" for all; it needs
	// Plugin.
	State string `json:"state"`
}

// NodeStates lists the values of NodeFilter.State, in display order.
var NodeStates = []string{migration.NodeStateMigrated.String(), migration.NodeStateNotMigrated.String(), migration.NodeStateUnknown.String()}

// Validate says what is wrong with a filter, in words naming the query parameter or flag.
func (f NodeFilter) Validate() error {
	if f.Plugin != "" && !migration.IsMigratablePlugin(f.Plugin) {
		return fmt.Errorf("plugin %q is not an in-tree plugin CSI migration covers; use one of %v", f.Plugin, migration.MigratablePlugins)
	}
	if f.State == "" {
		return nil
	}
	valid := false
	for _, s := range NodeStates {
		valid = valid || s == f.State
	}
	if !valid {
		return fmt.Errorf("state %q is not valid; use one of %v", f.State, NodeStates)
	}
	if f.Plugin == "" {
		return fmt.Errorf("state %q needs a plugin: a node's state is per plugin", f.State)
	}
	return nil
}

// NodesReport is the node view: the managed nodes a filter keeps, sorted by name. Its JSON
// is /api/v1/nodes and `adc status --nodes -o json` (docs/rollout-api.md).
type NodesReport struct {
	GeneratedAt  time.Time            `json:"generatedAt"`
	Source       Source               `json:"source"`
	Standby      bool                 `json:"standby"`
	Message      string               `json:"message"`
	NodeSource   migration.NodeSource `json:"nodeSource"`
	NodesManaged int                  `json:"nodesManaged"`
	// Filter is the filter applied; Nodes the nodes it kept.
	Filter NodeFilter    `json:"filter"`
	Nodes  []NodeRollout `json:"nodes"`
}

// NodesView returns the node view of r under f; f must be valid (Validate).
func (r Report) NodesView(f NodeFilter) NodesReport {
	out := NodesReport{GeneratedAt: r.GeneratedAt, Source: r.Source, Standby: r.Standby, Message: r.Message,
		NodeSource: r.NodeSource, NodesManaged: r.NodesManaged, Filter: f, Nodes: []NodeRollout{}}
	for _, n := range r.Nodes {
		if f.State != "" && n.States[f.Plugin] != f.State {
			continue
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// nodeObjectOf names the object the node source reads for the node, as NodePluginMigration
// picks it.
func nodeObjectOf(src migration.NodeSource, n migration.NodeObjects) string {
	switch {
	case (src == migration.NodeSourceCSINode || src == migration.NodeSourceAuto) && n.CSINode != nil:
		return NodeObjectCSINode
	case (src == migration.NodeSourceCSINodeInfo || src == migration.NodeSourceAuto) && n.CSINodeInfo != nil:
		return NodeObjectCSINodeInfo
	}
	return NodeObjectNone
}

// newNodeRollout starts a node's row from its objects and per-plugin states.
func newNodeRollout(src migration.NodeSource, n migration.NodeObjects, perPlugin map[string]migration.NodeMigrationState) NodeRollout {
	row := NodeRollout{Name: n.Name, Source: nodeObjectOf(src, n), MigratedPlugins: []string{},
		States: make(map[string]string, len(perPlugin)), VolumesByMechanism: make(map[migration.Mechanism]int, len(migration.Mechanisms))}
	if n.Node != nil {
		row.KubeletVersion = n.Node.Status.NodeInfo.KubeletVersion
	}
	for p, st := range perPlugin {
		row.States[p] = st.String()
		if st == migration.NodeStateMigrated {
			row.MigratedPlugins = append(row.MigratedPlugins, p)
		}
	}
	sort.Strings(row.MigratedPlugins)
	for _, m := range migration.Mechanisms {
		row.VolumesByMechanism[m] = 0
	}
	return row
}

// countNodeVolumes adds each pair to its node's row.
func countNodeVolumes(rows []NodeRollout, pairs []pairFacts) {
	at := make(map[string]int, len(rows))
	for i := range rows {
		at[rows[i].Name] = i
	}
	for i := range pairs {
		if j, ok := at[pairs[i].node]; ok {
			rows[j].VolumesByMechanism[pairs[i].mechanism]++
		}
	}
}
