package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// RenderText writes the report for a terminal: per pod, per volume the decision and the
// objects that decided it, the attachment here and elsewhere, the controller's memory, and
// what happens next. Cluster data is flattened to one line per item.
func RenderText(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Explaining %s at %s (%s; --max-wait-for-unmount %s)\n", flat(r.Target.String()), r.GeneratedAt.UTC().Format(time.RFC3339), flat(r.Config), r.MaxWaitForUnmount)
	if c := r.Controller; c != nil {
		if c.Standby {
			fmt.Fprintf(&b, "controller %s is a standby replica and has no memory to show: %s\n", flat(c.Address), flat(c.Message))
		} else {
			fmt.Fprintf(&b, "controller %s: held pairs, problems, recent operations and operations under way from its memory; not exposed: %s\n", flat(c.Address), strings.Join(c.NotExposed, "; "))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", flat(n))
	}
	for _, p := range r.Pods {
		fmt.Fprintf(&b, "pod %s/%s on node %s (phase %s)\n", flat(p.Namespace), flat(p.Name), flat(orNone(p.Node)), flat(orNone(p.Phase)))
		if p.Inactive != "" {
			fmt.Fprintf(&b, "  %s\n", flat(p.Inactive))
		}
		for _, v := range p.Volumes {
			writeVolume(&b, v)
		}
	}
	if len(r.Attachments) > 0 {
		fmt.Fprintf(&b, "attachments of %s:\n", flat(r.Target.String()))
		for _, a := range r.Attachments {
			writeAttachment(&b, "  ", a)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the explanation: %w", err)
	}
	return nil
}

func writeVolume(b *strings.Builder, v Volume) {
	fmt.Fprintf(b, "  volume %s", flat(v.Name))
	if v.Claim != "" {
		fmt.Fprintf(b, " (claim %s", flat(v.Claim))
		if v.PV != "" {
			fmt.Fprintf(b, " -> pv %s", flat(v.PV))
		}
		b.WriteString(")")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "    decision: %s", v.Mechanism)
	if v.WaitCause != "" {
		fmt.Fprintf(b, " (%s)", v.WaitCause)
	}
	fmt.Fprintf(b, ": %s\n", flat(v.Reason))
	for _, f := range v.DecidedBy {
		fmt.Fprintf(b, "      %s: %s\n", flat(f.Object), flat(f.Says))
	}
	for _, n := range v.Notes {
		fmt.Fprintf(b, "      note: %s\n", flat(n))
	}
	if v.Names.VolumeAttachment != "" || v.Names.CSIUnique != "" || v.Names.InTreeUnique != "" {
		var names []string
		for _, n := range []struct{ what, v string }{{"VolumeAttachment", v.Names.VolumeAttachment}, {"CSI", v.Names.CSIUnique}, {"in-tree", v.Names.InTreeUnique}} {
			if n.v != "" {
				names = append(names, n.what+" "+n.v)
			}
		}
		fmt.Fprintf(b, "    names: %s\n", flat(strings.Join(names, ", ")))
	}
	if v.Here != nil {
		writeAttachment(b, "    here: ", *v.Here)
	} else if v.Names.VolumeAttachment != "" || v.Names.InTreeUnique != "" {
		b.WriteString("    here: not attached (no VolumeAttachment, not in node status)\n")
	}
	for _, a := range v.Elsewhere {
		label := "    elsewhere: "
		if !v.MultiAttach {
			label = "    ReadWriteOnce, held by: "
		}
		writeAttachment(b, label, a)
	}
	if m := v.Controller; m != nil {
		if m.Held != nil {
			reason := flat(m.Held.Reason)
			if m.Held.Reason == v.Reason {
				reason = "the decision's reason above"
			}
			fmt.Fprintf(b, "    controller: held since %s, %d retries, next retry %s: %s\n", formatTime(m.Held.Since), m.Held.Retries, formatTime(m.Held.NextRetry), reason)
		} else {
			b.WriteString("    controller: not held\n")
		}
		for _, p := range m.Problems {
			fmt.Fprintf(b, "    controller problem %s: %s\n", p.Kind, flat(p.Reason))
		}
		for _, op := range m.Operations {
			result := "ok"
			if op.Error != "" {
				result = "failed: " + op.Error
			}
			fmt.Fprintf(b, "    controller operation: %s on node %s at %s took %.3fs, %s\n", op.Kind, flat(op.Node), op.Time.UTC().Format(time.RFC3339), op.DurationSeconds, flat(result))
		}
		for _, op := range m.UnderWay {
			fmt.Fprintf(b, "    controller operation under way: %s on node %s, requested at %s\n", op.Kind, flat(op.Node), op.Time.UTC().Format(time.RFC3339))
		}
	}
	fmt.Fprintf(b, "    next: %s\n", flat(v.Next))
}

func writeAttachment(b *strings.Builder, prefix string, a Attachment) {
	fmt.Fprintf(b, "%snode %s", prefix, flat(a.Node))
	if a.Exists {
		state := "not attached yet"
		if a.Attached {
			state = "attached"
		}
		if a.Deleting {
			state += ", being deleted"
		}
		fmt.Fprintf(b, ", VolumeAttachment %s %s", flat(a.VolumeAttachment), state)
		if a.Created != nil {
			fmt.Fprintf(b, " (created %s)", formatTime(a.Created))
		}
	}
	fmt.Fprintf(b, "; node status lists it: %s; kubelet reports it in use: %s", yesNo(a.ListedInStatus), yesNo(a.InUse))
	if len(a.UsedBy) > 0 {
		fmt.Fprintf(b, "; used by %s", flat(strings.Join(a.UsedBy, ", ")))
	}
	b.WriteString("\n")
	if a.AttachError != "" {
		fmt.Fprintf(b, "%s  attach error (%s): %s\n", strings.Repeat(" ", len(prefix)-len(strings.TrimLeft(prefix, " "))), formatTime(a.AttachErrorTime), flat(a.AttachError))
	}
	if a.Detach != nil {
		fmt.Fprintf(b, "%s  detach: %s\n", strings.Repeat(" ", len(prefix)-len(strings.TrimLeft(prefix, " "))), flat(a.Detach.Why))
	}
}

// RenderJSON writes the report as indented JSON (the schema of /api/v1/explain).
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the explanation as JSON: %w", err)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// flat replaces line breaks and tabs, so one item stays on one line.
func flat(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ", "\t", " ").Replace(s)
}
