package preflight

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migration-aware/adc/pkg/migration"
)

// Options say which step to check.
type Options struct {
	// Config is the migration configuration the controller runs with now (its --migration,
	// --node-migration-source and --driver-info-source); the step starts from it.
	Config migration.Config
	// Plugins are the in-tree plugins that move; empty means all seven.
	Plugins []string
	// To is the mode they move to; empty means each plugin's next step: off to on, on to
	// complete (complete stays complete, which checks the state as it is).
	To migration.Mode
}

// NextMode is the step after m in a rollout: off to on, on to complete; complete is last.
func NextMode(m migration.Mode) migration.Mode {
	switch m {
	case migration.ModeOff:
		return migration.ModeOn
	default:
		return migration.ModeComplete
	}
}

// ParseStep parses a --to value: on, complete or off; empty means the next step.
func ParseStep(s string) (migration.Mode, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	m := migration.Mode(s)
	if !m.Valid() {
		return "", fmt.Errorf("unknown step %q: a plugin moves to one of %s", s, joinModes())
	}
	return m, nil
}

// ParsePlugin accepts an in-tree plugin's full name (kubernetes.io/gce-pd) or its short one
// (gce-pd) and returns the full name.
func ParsePlugin(s string) (string, error) {
	s = strings.TrimSpace(s)
	name := s
	if !strings.Contains(name, "/") {
		name = "kubernetes.io/" + name
	}
	if !migration.IsMigratablePlugin(name) {
		return "", fmt.Errorf("unknown plugin %q: CSI migration covers %s", s, strings.Join(migration.MigratablePlugins, ", "))
	}
	return name, nil
}

// steps validates the options and returns one step per plugin, sorted by plugin.
func (o Options) steps() ([]Step, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	if o.To != "" && !o.To.Valid() {
		return nil, fmt.Errorf("preflight: unknown step %q: a plugin moves to one of %s", o.To, joinModes())
	}
	plugins := o.Plugins
	if len(plugins) == 0 {
		plugins = migration.MigratablePlugins
	}
	seen := map[string]bool{}
	var out []Step
	for _, p := range plugins {
		name, err := ParsePlugin(p)
		if err != nil {
			return nil, fmt.Errorf("preflight: %w", err)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		from := o.Config.Mode(name)
		to := o.To
		if to == "" {
			to = NextMode(from)
		}
		out = append(out, Step{Plugin: name, Driver: driverOf(name), From: from, To: to})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plugin < out[j].Plugin })
	return out, nil
}

// backward reports whether the step goes back towards the in-tree plugin (complete to on or
// off, on to off), which needs drains.
func (s Step) backward() bool { return modeRank(s.To) < modeRank(s.From) }

func modeRank(m migration.Mode) int {
	switch m {
	case migration.ModeOff:
		return 0
	case migration.ModeOn:
		return 1
	}
	return 2
}

func joinModes() string {
	parts := make([]string, len(migration.Modes))
	for i, m := range migration.Modes {
		parts[i] = string(m)
	}
	return strings.Join(parts, ", ")
}
