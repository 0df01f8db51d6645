package rollout

import (
	"sort"

	csitrans "k8s.io/csi-translation-lib"

	"github.com/migration-aware/adc/pkg/migration"
)

// ManagedAnnotation marks the nodes whose volumes the attach/detach controller manages.
const ManagedAnnotation = migration.ManagedAnnotation

// translator maps in-tree plugin names to CSI driver names; it is stateless.
var translator = csitrans.New()

// DriverFor returns the CSI driver that replaces an in-tree plugin, or "" when the
// translation library does not know the plugin.
func DriverFor(plugin string) string {
	d, err := translator.GetCSINameFromInTreeName(plugin)
	if err != nil {
		return ""
	}
	return d
}

// nodeStates is the migration state of every managed node for every migratable plugin, so a
// report asks the node source once per (node, plugin).
type nodeStates map[string]map[string]migration.NodeMigrationState

// state returns what node reports for plugin; unknown for a node that is not managed.
func (s nodeStates) state(node, plugin string) migration.NodeMigrationState {
	return s[node][plugin]
}

// pluginRollouts counts nodes per plugin and state.
func pluginRollouts(cfg migration.Config, nodes []migration.NodeObjects) []PluginRollout {
	out, _, _, _ := countNodes(cfg, nodes)
	return out
}

// countNodes asks the configured node source about every (node, migratable plugin) and
// returns the per-plugin counts, each node's states (for skew detection), the notes the
// node source made (one per node and message) and the node view's rows, sorted by name. The
// caller passes managed nodes only.
func countNodes(cfg migration.Config, nodes []migration.NodeObjects) ([]PluginRollout, nodeStates, []NodeNote, []NodeRollout) {
	src := cfg.NodeSource
	if src == "" {
		src = migration.NodeSourceCSINode
	}
	plugins := make([]PluginRollout, len(migration.MigratablePlugins))
	for i, p := range migration.MigratablePlugins {
		plugins[i] = PluginRollout{Plugin: p, Driver: DriverFor(p), Mode: cfg.Mode(p)}
	}
	states := make(nodeStates, len(nodes))
	notes := []NodeNote{}
	rows := make([]NodeRollout, 0, len(nodes))
	for _, n := range nodes {
		perPlugin := make(map[string]migration.NodeMigrationState, len(plugins))
		seen := map[string]bool{}
		for i := range plugins {
			pr := &plugins[i]
			nm := migration.NodePluginMigration(src, n, pr.Plugin, pr.Driver)
			perPlugin[pr.Plugin] = nm.State
			pr.NodesTotal++
			switch nm.State {
			case migration.NodeStateMigrated:
				pr.NodesMigrated++
			case migration.NodeStateNotMigrated:
				pr.NodesNotMigrated++
			default:
				pr.NodesUnknown++
			}
			// The same annotation yields the same note for every plugin: keep one.
			for _, note := range nm.Notes {
				if !seen[note] {
					seen[note] = true
					notes = append(notes, NodeNote{Node: n.Name, Message: note})
				}
			}
		}
		states[n.Name] = perPlugin
		rows = append(rows, newNodeRollout(src, n, perPlugin))
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Node < notes[j].Node })
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return plugins, states, notes, rows
}
