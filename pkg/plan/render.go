package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// RenderTable writes the report as an aligned table with the columns NODE, POD, VOLUME,
// PLUGIN, DRIVER, MECHANISM, REASON, then a summary line counting each mechanism, then any
// notes. Empty cells are shown as "-" so columns stay readable.
func RenderTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOD\tVOLUME\tPLUGIN\tDRIVER\tMECHANISM\tREASON")
	for _, row := range r.Decisions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			cell(row.Node), cell(row.Pod), cell(row.Volume), cell(row.Plugin), cell(row.Driver), cell(string(row.Mechanism)), cell(row.Reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing plan table: %w", err)
	}
	if _, err := fmt.Fprintln(w, SummaryLine(r)); err != nil {
		return fmt.Errorf("writing plan summary: %w", err)
	}
	seen := map[string]bool{}
	for _, row := range r.Decisions {
		for _, n := range row.Notes {
			if seen[n] {
				continue
			}
			seen[n] = true
			if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
				return fmt.Errorf("writing plan notes: %w", err)
			}
		}
	}
	for _, n := range r.NodeLoss {
		if _, err := fmt.Fprintf(w, "node not Ready: %s %s: %s (rule %s): %s\n", cell(n.Node), cell(n.UniqueName), NodeLossOutlook(n), cell(n.Rule), cell(n.Reason)); err != nil {
			return fmt.Errorf("writing plan node-loss rows: %w", err)
		}
	}
	return nil
}

// NodeLossOutlook says in a few words what a node-loss row's rule will do.
func NodeLossOutlook(n NodeLossVolume) string {
	switch {
	case n.DetachNow:
		return "detach now (" + string(n.Evidence) + ")"
	case n.Held:
		return "held by policy"
	case n.DetachAt != nil:
		return "detach at " + n.DetachAt.UTC().Format(time.RFC3339)
	}
	return "kept while the kubelet reports it in use"
}

// SummaryLine renders the mechanism counts in the stable order of migration.Mechanisms, e.g.
// "Summary: 12 decisions: csi=7 csi-no-attach=0 in-tree=1 not-attachable=3 wait=1 error=0".
func SummaryLine(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summary: %d decisions:", len(r.Decisions))
	for _, m := range migration.Mechanisms {
		fmt.Fprintf(&b, " %s=%d", m, r.Summary[m])
	}
	return b.String()
}

// RenderJSON writes the report in the documented JSON shape:
// {"decisions":[{"pod":...,"volumeAttachment":...}],"summary":{"<mechanism>":<count>}}, with
// all six mechanisms in the summary (zeros included), indented for humans; jq and scripts
// parse it the same way.
func RenderJSON(w io.Writer, r Report) error {
	if r.Decisions == nil {
		r.Decisions = []Row{}
	}
	if r.Summary == nil {
		r.Summary = NewReport(r.Decisions).Summary
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing plan JSON: %w", err)
	}
	return nil
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	// A tab or newline inside a cell would break the table's alignment.
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}
