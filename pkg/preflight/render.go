package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// RenderText writes the report for a terminal: one line per step, then per finding its
// severity, check, plugin and object, and indented why and fix lines, then the verdict.
// Cluster data is flattened to one line per item, so a crafted name cannot forge lines.
func RenderText(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Preflight at %s of %d managed nodes (%s)\n", r.GeneratedAt.UTC().Format(time.RFC3339), r.NodesManaged, flat(r.Config))
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "  step %s: %s -> %s (CSI driver %s)\n", s.Plugin, s.From, s.To, s.Driver)
	}
	for _, f := range r.Findings {
		node := ""
		if f.Node != "" && !strings.HasSuffix(f.Object.String(), "/"+f.Node) {
			node = " on node " + flat(f.Node)
		}
		fmt.Fprintf(&b, "%s %s %s %s%s\n", strings.ToUpper(string(f.Severity)), f.Check, f.Plugin, flat(f.Object.String()), node)
		fmt.Fprintf(&b, "    why: %s\n", flat(f.Why))
		if c := f.StorageClass; c != nil {
			fmt.Fprintf(&b, "    translated: provisioner %s, parameters %s", flat(c.Provisioner), flat(formatParams(c.Parameters)))
			if len(c.AllowedTopologies) > 0 {
				fmt.Fprintf(&b, ", allowedTopologies %s", flat(strings.Join(c.AllowedTopologies, " or ")))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "    fix: %s\n", flat(f.Fix))
	}
	switch {
	case r.OK && len(r.Findings) == 0:
		b.WriteString("OK: nothing blocks or changes\n")
	case r.OK:
		fmt.Fprintf(&b, "OK: nothing blocks (%s)\n", count(r.Warnings, "warning", "warnings"))
	default:
		fmt.Fprintf(&b, "NOT SAFE: %s, %s; fix what blocks first\n", count(r.Blocking, "finding blocks", "findings block"), count(r.Warnings, "warning", "warnings"))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the preflight report: %w", err)
	}
	return nil
}

// RenderJSON writes the report as indented JSON (the schema of /api/v1/preflight).
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the preflight report as JSON: %w", err)
	}
	return nil
}

// formatParams renders parameters as {k=v, ...}, sorted.
func formatParams(p map[string]string) string {
	keys := make(map[string]bool, len(p))
	for k := range p {
		keys[k] = true
	}
	parts := make([]string, 0, len(p))
	for _, k := range sortedKeys(keys) {
		parts = append(parts, k+"="+p[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// flat replaces line breaks and tabs, so one item stays on one line.
func flat(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ", "\t", " ").Replace(s)
}
