package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// barWidth is the number of cells of a text rollout bar.
const barWidth = 10

// Bar renders migrated of total as a text bar, e.g. "[######----]"; rounding down, so a bar
// is only full when every node is migrated.
func Bar(migrated, total int) string {
	filled := 0
	if total > 0 {
		filled = migrated * barWidth / total
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled) + "]"
}

// RenderText writes the report for a terminal: one rollout bar per plugin, the volumes by
// mechanism, the held pairs and the problems. Cluster data is printed on one line per item
// with tabs and newlines flattened, so a crafted name cannot forge lines.
func RenderText(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "CSI migration rollout (source %s, node source %s, %d managed nodes) at %s\n",
		r.Source, r.NodeSource, r.NodesManaged, r.GeneratedAt.UTC().Format(time.RFC3339))
	if r.Message != "" {
		fmt.Fprintf(&b, "%s\n", flat(r.Message))
	}
	if o := r.OtherController; o != nil {
		state := "gone"
		if o.Fenced {
			state = "FENCED"
		}
		fmt.Fprintf(&b, "Other attach/detach controller: %s: %s\n", state, flat(o.Message))
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, p := range r.Plugins {
		v := p.VolumesByPath
		fmt.Fprintf(tw, "%s\t%s\t%s\tvolumes csi=%d in-tree=%d held=%d\t%s\n",
			p.Plugin, p.Mode, nodesColumn(p), v.CSI, v.InTree, v.Held, readinessColumn(p, r.Standby))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing rollout table: %w", err)
	}
	b.WriteString("Volumes by mechanism:")
	total := 0
	for _, m := range migration.Mechanisms {
		fmt.Fprintf(&b, " %s=%d", m, r.VolumesByMechanism[m])
		total += r.VolumesByMechanism[m]
	}
	fmt.Fprintf(&b, " (%d pairs)\n", total)
	fmt.Fprintf(&b, "Held: %d", len(r.Held))
	if len(r.Held) > 0 {
		counts := map[migration.Mechanism]int{}
		for _, h := range r.Held {
			counts[h.Mechanism]++
		}
		sep := " ("
		for _, m := range migration.Mechanisms {
			if counts[m] > 0 {
				fmt.Fprintf(&b, "%s%s=%d", sep, m, counts[m])
				sep = " "
			}
		}
		b.WriteString(")")
	}
	b.WriteString("\n")
	for _, h := range r.Held {
		fmt.Fprintf(&b, "  %s %s %s %s: %s\n", h.Mechanism, flat(h.Node), flat(h.Pod), flat(h.Volume), flat(h.Reason))
	}
	fmt.Fprintf(&b, "Problems: %d\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  %s %s %s %s: %s\n", p.Kind, flat(p.Node), flat(p.Pod), flat(p.Volume), flat(p.Reason))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: node %s: %s\n", flat(n.Node), flat(n.Message))
	}
	if len(r.NodeLoss) > 0 {
		fmt.Fprintf(&b, "Volumes of nodes not Ready: %d\n", len(r.NodeLoss))
		for _, n := range r.NodeLoss {
			fmt.Fprintf(&b, "  %s %s: %s (rule %s): %s\n", flat(n.Node), flat(n.Name()), plan.NodeLossOutlook(n), flat(n.Rule), flat(n.Reason))
		}
	}
	if r.Source == SourceController {
		fmt.Fprintf(&b, "Recent operations: %d\n", len(r.Operations))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing rollout status: %w", err)
	}
	return nil
}

// nodesColumn is a plugin's node progress: a bar for off and on; for complete, where the
// nodes are no longer consulted, the kubelets that lag behind as a skew warning.
func nodesColumn(p PluginRollout) string {
	if p.Mode != migration.ModeComplete {
		return fmt.Sprintf("%s %d/%d migrated, %d not, %d unknown", Bar(p.NodesMigrated, p.NodesTotal), p.NodesMigrated, p.NodesTotal, p.NodesNotMigrated, p.NodesUnknown)
	}
	if lag := p.NodesTotal - p.NodesMigrated; lag > 0 {
		return fmt.Sprintf("skew: %d/%d nodes not migrated (%d not, %d unknown)", lag, p.NodesTotal, p.NodesNotMigrated, p.NodesUnknown)
	}
	return fmt.Sprintf("all %d nodes migrated", p.NodesTotal)
}

// readinessColumn is a plugin's readiness for complete in a few words.
func readinessColumn(p PluginRollout, standby bool) string {
	rd := p.Readiness
	switch {
	case standby:
		return ""
	case p.Mode == migration.ModeComplete:
		return "complete"
	case rd.Ready:
		return "ready for complete"
	}
	return fmt.Sprintf("not ready for complete: %d nodes, %d volumes", len(rd.NodesNotMigrated), len(rd.VolumesChangingPath))
}

// RenderJSON writes the report as indented JSON in the shape of docs/rollout-api.md.
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.withLists()); err != nil {
		return fmt.Errorf("writing rollout JSON: %w", err)
	}
	return nil
}

// flat keeps a value on one line: control characters (newlines, tabs, escape sequences)
// become spaces, so cluster data cannot forge output lines or drive the terminal.
func flat(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}
