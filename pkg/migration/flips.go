package migration

// PluginStates is a node's reported migration state for every migratable in-tree plugin.
type PluginStates map[string]NodeMigrationState

// NodePluginStates asks the node source about every migratable plugin of one node.
func NodePluginStates(source NodeSource, node NodeObjects) PluginStates {
	out := make(PluginStates, len(MigratablePlugins))
	for _, plugin := range MigratablePlugins {
		driver, err := translator.GetCSINameFromInTreeName(plugin)
		if err != nil {
			continue
		}
		out[plugin] = NodePluginMigration(source, node, plugin, driver).State
	}
	return out
}

// PluginFlip is one plugin a node switched between in-tree and CSI.
type PluginFlip struct {
	Plugin string
	// Migrated is the new state: true when the node now reports the plugin migrated.
	Migrated bool
}

// Flips returns the plugins whose reported state went from migrated to not migrated or back
// between before and after, in MigratablePlugins order. A node reporting for the first time,
// or no longer reporting (unknown), flips nothing: only a change the node itself reported is
// a flip.
func Flips(before, after PluginStates) []PluginFlip {
	var out []PluginFlip
	for _, plugin := range MigratablePlugins {
		b, a := before[plugin], after[plugin]
		if b == NodeStateUnknown || a == NodeStateUnknown || a == b {
			continue
		}
		out = append(out, PluginFlip{Plugin: plugin, Migrated: a == NodeStateMigrated})
	}
	return out
}
