package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// RenderNodesText writes the node view for a terminal: one line per node with its kubelet
// version, the object it reported through, its migrated plugins (or, filtered by plugin, its
// state for that plugin) and its volumes by mechanism. Cluster data is flattened to one line.
func RenderNodesText(w io.Writer, r NodesReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Managed nodes (source %s, node source %s) at %s: %d of %d shown%s\n",
		r.Source, r.NodeSource, r.GeneratedAt.UTC().Format(time.RFC3339), len(r.Nodes), r.NodesManaged, filterText(r.Filter))
	if r.Message != "" {
		fmt.Fprintf(&b, "%s\n", flat(r.Message))
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	col := "MIGRATED PLUGINS"
	if r.Filter.Plugin != "" {
		col = "STATE (" + r.Filter.Plugin + ")"
	}
	fmt.Fprintf(tw, "NODE\tKUBELET\tREPORTS VIA\t%s\tVOLUMES\n", col)
	for _, n := range r.Nodes {
		what := strings.Join(n.MigratedPlugins, ",")
		if r.Filter.Plugin != "" {
			what = n.States[r.Filter.Plugin]
		}
		if what == "" {
			what = "-"
		}
		kubelet := n.KubeletVersion
		if kubelet == "" {
			kubelet = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", flat(n.Name), flat(kubelet), n.Source, what, mechanismCounts(n.VolumesByMechanism))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the node table: %w", err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the node view: %w", err)
	}
	return nil
}

// RenderNodesJSON writes the node view as indented JSON in the shape of docs/rollout-api.md.
func RenderNodesJSON(w io.Writer, r NodesReport) error {
	if r.Nodes == nil {
		r.Nodes = []NodeRollout{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the node view as JSON: %w", err)
	}
	return nil
}

// mechanismCounts lists the non-zero mechanisms, "-" when the node has no volume.
func mechanismCounts(byMech map[migration.Mechanism]int) string {
	var parts []string
	for _, m := range migration.Mechanisms {
		if byMech[m] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", m, byMech[m]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func filterText(f NodeFilter) string {
	switch {
	case f.State != "":
		return fmt.Sprintf(" (%s %s)", f.Plugin, f.State)
	case f.Plugin != "":
		return fmt.Sprintf(" (plugin %s)", f.Plugin)
	}
	return ""
}
