package dashboard

import (
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

// refreshSeconds is how often the page re-fetches itself with JavaScript on;
// noScriptRefreshSeconds how often it reloads with JavaScript off.
const (
	refreshSeconds         = 5
	noScriptRefreshSeconds = 30
)

// maxRows bounds each list on the page, so a cluster with thousands of held pairs still
// gets a page a browser renders quickly; the JSON API always has every entry.
const maxRows = 200

// page is what renderPage writes: the report plus values computed for display, so the
// renderer holds no arithmetic.
type page struct {
	rollout.Report
	Plugins []pluginRow
	// InPlay are the plugins whose readiness the readiness panel details; NotStarted names
	// the others (no node migrated, no volume, mode not complete).
	InPlay         []pluginRow
	NotStarted     []string
	Mechanisms     []mechanismTile
	Pairs          int
	RefreshSeconds int
	NoScriptReload int
	// HeldShown, ProblemsShown and NotesShown are the first maxRows entries of each list;
	// the *Hidden counts say how many more the JSON API has.
	HeldShown                               []rollout.HeldPair
	ProblemsShown                           []rollout.Problem
	NotesShown                              []rollout.NodeNote
	HeldHidden, ProblemsHidden, NotesHidden int
}

// pluginRow is one rollout bar. The percentages are SVG widths in a 100-unit view box.
type pluginRow struct {
	rollout.PluginRollout
	MigratedPct, NotMigratedPct, UnknownPct float64
	ModeHint                                string
	// Complete is true for mode complete: the row shows the lagging kubelets (SkewNodes) as a
	// warning instead of a bar, since the nodes are no longer consulted.
	Complete  bool
	SkewNodes int
	// InPlay is true when the plugin's rollout has started (a node migrated, a volume of it
	// exists, or the mode is complete), so its readiness blockers are listed on the page;
	// the others are named on one line.
	InPlay bool
	// BlockersShown and ChangesShown are the first maxRows readiness blockers; the *Hidden
	// counts say how many more the JSON API has.
	BlockersShown                 []rollout.NodeBlocker
	ChangesShown                  []rollout.PathChange
	BlockersHidden, ChangesHidden int
}

// mechanismTile is one mechanism's pair count.
type mechanismTile struct {
	Mechanism migration.Mechanism
	Count     int
	Hint      string
}

var mechanismHints = map[migration.Mechanism]string{
	migration.MechanismCSI:           "VolumeAttachment through the CSI driver",
	migration.MechanismCSINoAttach:   "CSI driver without an attach phase",
	migration.MechanismInTree:        "in-tree volume plugin",
	migration.MechanismNotAttachable: "no attach phase (configMap, emptyDir, ...)",
	migration.MechanismWait:          "held: node or claim not ready yet",
	migration.MechanismError:         "held: cannot decide safely",
}

var modeHints = map[migration.Mode]string{
	migration.ModeOff:      "in-tree everywhere; a node reporting it migrated is version skew",
	migration.ModeOn:       "each node decides through what it reports",
	migration.ModeComplete: "CSI everywhere; nodes are not consulted",
}

func newPage(r rollout.Report) page {
	p := page{Report: r, RefreshSeconds: refreshSeconds, NoScriptReload: noScriptRefreshSeconds}
	p.HeldShown, p.HeldHidden = firstRows(r.Held)
	p.ProblemsShown, p.ProblemsHidden = firstRows(r.Problems)
	p.NotesShown, p.NotesHidden = firstRows(r.Notes)
	for _, pr := range r.Plugins {
		row := pluginRow{PluginRollout: pr, ModeHint: modeHints[pr.Mode], Complete: pr.Mode == migration.ModeComplete,
			SkewNodes: len(pr.Readiness.NodesNotMigrated)}
		row.InPlay = !r.Standby && (row.Complete || pr.NodesMigrated > 0 || pr.VolumesByPath.Total > 0)
		row.BlockersShown, row.BlockersHidden = firstRows(pr.Readiness.NodesNotMigrated)
		row.ChangesShown, row.ChangesHidden = firstRows(pr.Readiness.VolumesChangingPath)
		if row.InPlay {
			p.InPlay = append(p.InPlay, row)
		} else {
			p.NotStarted = append(p.NotStarted, pr.Plugin)
		}
		if pr.NodesTotal > 0 {
			total := float64(pr.NodesTotal)
			row.MigratedPct = percent(pr.NodesMigrated, total)
			row.NotMigratedPct = percent(pr.NodesNotMigrated, total)
			row.UnknownPct = percent(pr.NodesUnknown, total)
		}
		p.Plugins = append(p.Plugins, row)
	}
	for _, m := range migration.Mechanisms {
		p.Mechanisms = append(p.Mechanisms, mechanismTile{Mechanism: m, Count: r.VolumesByMechanism[m], Hint: mechanismHints[m]})
		p.Pairs += r.VolumesByMechanism[m]
	}
	return p
}

// firstRows returns at most maxRows entries and how many were left out.
func firstRows[T any](list []T) ([]T, int) {
	if len(list) <= maxRows {
		return list, 0
	}
	return list[:maxRows], len(list) - maxRows
}

func percent(n int, total float64) float64 {
	return float64(int(float64(n)*1000/total+0.5)) / 10
}
