package migration

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/csi-translation-lib/plugins"
)

// MigratablePlugins lists, sorted, the in-tree plugins that k8s.io/csi-translation-lib can
// translate (the translation table in upstream-facts). These are the only plugins a migration
// mode applies to and the only plugin names ParseModes and the CSINode annotation accept.
// The names come from the library's own constants so the two can never drift apart.
var MigratablePlugins = []string{
	plugins.AWSEBSInTreePluginName,
	plugins.AzureDiskInTreePluginName,
	plugins.AzureFileInTreePluginName,
	plugins.CinderInTreePluginName,
	plugins.GCEPDInTreePluginName,
	plugins.PortworxVolumePluginName,
	plugins.VSphereInTreePluginName,
}

// Modes lists every valid Mode, for flag help and error messages.
var Modes = []Mode{ModeOff, ModeOn, ModeComplete}

// NodeSources lists every valid NodeSource, for flag help and error messages.
var NodeSources = []NodeSource{NodeSourceCSINode, NodeSourceCSINodeInfo, NodeSourceAuto}

// DriverSources lists every valid DriverSource, for flag help and error messages.
var DriverSources = []DriverSource{DriverSourceCSIDriver, DriverSourceSeed, DriverSourceAuto}

// String returns the driver-info source as written on the command line.
func (s DriverSource) String() string { return string(s) }

// Valid reports whether s is one of csidriver, seed, auto.
func (s DriverSource) Valid() bool {
	return s == DriverSourceCSIDriver || s == DriverSourceSeed || s == DriverSourceAuto
}

// ReadsSeed reports whether the source reads seed-API CSIDrivers, so callers list or watch
// them (and need the CRD) only then.
func (s DriverSource) ReadsSeed() bool { return s == DriverSourceSeed || s == DriverSourceAuto }

// String returns the mode as written on the command line.
func (m Mode) String() string { return string(m) }

// Valid reports whether m is one of off, on, complete.
func (m Mode) Valid() bool { return m == ModeOff || m == ModeOn || m == ModeComplete }

// String returns the node source as written on the command line.
func (s NodeSource) String() string { return string(s) }

// Valid reports whether s is one of csinode, csinodeinfo, auto.
func (s NodeSource) Valid() bool {
	return s == NodeSourceCSINode || s == NodeSourceCSINodeInfo || s == NodeSourceAuto
}

// IsMigratablePlugin reports whether name is one of MigratablePlugins.
func IsMigratablePlugin(name string) bool {
	return migratableIndex(name) >= 0
}

// migratableIndex returns the position of name in MigratablePlugins, or -1. A linear scan
// over seven short strings beats a map lookup and allocates nothing.
func migratableIndex(name string) int {
	for i, p := range MigratablePlugins {
		if p == name {
			return i
		}
	}
	return -1
}

// DefaultConfig is adc's out-of-the-box configuration: every migratable plugin `on` (each
// node decides through its CSINode), the CSINode as node source and the storage.k8s.io/v1
// CSIDriver as driver-info source. It differs from upstream
// 1.36 (all `complete`) only where a node has not reported yet: there adc waits instead of
// guessing.
func DefaultConfig() Config {
	modes := make(map[string]Mode, len(MigratablePlugins))
	for _, p := range MigratablePlugins {
		modes[p] = ModeOn
	}
	return Config{Modes: modes, NodeSource: NodeSourceCSINode, DriverSource: DriverSourceCSIDriver}
}

// WithModes returns a copy of c with modes laid over c.Modes, so a --migration flag that
// names two plugins keeps the defaults of the other five. c is not modified.
func (c Config) WithModes(modes map[string]Mode) Config {
	merged := make(map[string]Mode, len(c.Modes)+len(modes))
	for p, m := range c.Modes {
		merged[p] = m
	}
	for p, m := range modes {
		merged[p] = m
	}
	c.Modes = merged
	return c
}

// Mode returns the mode of an in-tree plugin: the configured one, or ModeOn for a plugin
// missing from Modes (documented on Config.Modes).
func (c *Config) Mode(plugin string) Mode {
	if c != nil {
		if m, ok := c.Modes[plugin]; ok {
			return m
		}
	}
	return ModeOn
}

// source returns the configured node source, defaulting an empty one to CSINode.
func (c *Config) source() NodeSource {
	if c == nil || c.NodeSource == "" {
		return NodeSourceCSINode
	}
	return c.NodeSource
}

// driverSource returns the configured driver-info source, defaulting an empty one to
// CSIDriver (storage.k8s.io/v1).
func (c *Config) driverSource() DriverSource {
	if c == nil || c.DriverSource == "" {
		return DriverSourceCSIDriver
	}
	return c.DriverSource
}

// Validate reports the first invalid mode, node source or driver-info source in c, so a controller can refuse a
// bad configuration at start-up instead of producing error decisions for every volume.
func (c *Config) Validate() error {
	if c == nil {
		return fmt.Errorf("migration config is nil")
	}
	for _, p := range sortedKeys(c.Modes) {
		if !IsMigratablePlugin(p) {
			return fmt.Errorf("migration config names unknown plugin %q; valid plugins: %s", p, strings.Join(MigratablePlugins, ", "))
		}
		if m := c.Modes[p]; !m.Valid() {
			return fmt.Errorf("migration config sets plugin %q to %q; valid modes: %s", p, m, joinModes())
		}
	}
	if c.NodeSource != "" && !c.NodeSource.Valid() {
		return fmt.Errorf("node migration source %q is not valid; valid sources: %s", c.NodeSource, joinSources())
	}
	if c.DriverSource != "" && !c.DriverSource.Valid() {
		return fmt.Errorf("driver info source %q is not valid; valid sources: %s", c.DriverSource, joinDriverSources())
	}
	return nil
}

// String renders c for logs and `adc plan` headers, e.g.
// "migration=kubernetes.io/aws-ebs=on,...; node-migration-source=csinode;
// driver-info-source=csidriver".
func (c Config) String() string {
	return "migration=" + FormatModes(c.Modes) + "; node-migration-source=" + string(c.source()) +
		"; driver-info-source=" + string(c.driverSource())
}

// ParseModes parses a --migration flag value such as
// "kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off". Spaces around items and
// empty items are tolerated; an empty string yields an empty map. Unknown plugin names,
// unknown modes, missing "=" and a plugin named twice are errors that list the valid values,
// because a typo here would silently change how volumes are attached.
func ParseModes(s string) (map[string]Mode, error) {
	modes := map[string]Mode{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("invalid migration setting %q: want <plugin>=<mode>, e.g. kubernetes.io/gce-pd=complete; valid modes: %s", item, joinModes())
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !IsMigratablePlugin(name) {
			return nil, fmt.Errorf("invalid migration setting %q: unknown plugin %q; valid plugins: %s", item, name, strings.Join(MigratablePlugins, ", "))
		}
		mode := Mode(value)
		if !mode.Valid() {
			return nil, fmt.Errorf("invalid migration setting %q: unknown mode %q; valid modes: %s", item, value, joinModes())
		}
		if _, dup := modes[name]; dup {
			return nil, fmt.Errorf("invalid migration setting %q: plugin %q is set more than once; set each plugin once", item, name)
		}
		modes[name] = mode
	}
	return modes, nil
}

// FormatModes renders modes in the ParseModes syntax, sorted by plugin, so that the flag's
// default and log lines are stable and can be pasted back into --migration.
func FormatModes(modes map[string]Mode) string {
	var b strings.Builder
	for i, p := range sortedKeys(modes) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
		b.WriteByte('=')
		b.WriteString(string(modes[p]))
	}
	return b.String()
}

// ParseNodeSource parses a --node-migration-source flag value. An empty value means the
// default, csinode; anything else must be one of NodeSources.
func ParseNodeSource(s string) (NodeSource, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return NodeSourceCSINode, nil
	}
	src := NodeSource(s)
	if !src.Valid() {
		return "", fmt.Errorf("invalid node migration source %q; valid sources: %s", s, joinSources())
	}
	return src, nil
}

// ParseDriverSource parses a --driver-info-source flag value. An empty value means the
// default, csidriver; anything else must be one of DriverSources.
func ParseDriverSource(s string) (DriverSource, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DriverSourceCSIDriver, nil
	}
	src := DriverSource(s)
	if !src.Valid() {
		return "", fmt.Errorf("invalid driver info source %q; valid sources: %s", s, joinDriverSources())
	}
	return src, nil
}

func joinDriverSources() string {
	parts := make([]string, len(DriverSources))
	for i, s := range DriverSources {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func joinModes() string {
	parts := make([]string, len(Modes))
	for i, m := range Modes {
		parts[i] = string(m)
	}
	return strings.Join(parts, ", ")
}

func joinSources() string {
	parts := make([]string, len(NodeSources))
	for i, s := range NodeSources {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]Mode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
