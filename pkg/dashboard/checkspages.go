package dashboard

import (
	"bytes"
	"net/url"
	"sort"
	"strings"

	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/preflight"
)

// preflightURL is the preflight page's (or API's) address for a plugin and step.
func preflightURL(path, plugin string, to migration.Mode) string {
	q := url.Values{}
	if plugin != "" {
		q.Set("plugin", plugin)
	}
	if to != "" {
		q.Set("to", string(to))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// renderPreflight writes the preflight page: the choice of plugin and step as plain links,
// the steps, the verdict and one row per finding. Every value from the cluster goes through
// htmlWriter.text or href.
func renderPreflight(buf *bytes.Buffer, r preflight.Report, opts preflight.Options) {
	w := htmlWriter{buf}
	writeHead(w, "preflight", checksRefreshSeconds, checksRefreshSeconds, r.GeneratedAt)
	w.raw("    <a href=\"" + PagePath + "\">← rollout</a> · <strong id=\"nodes-managed\">")
	w.int(r.NodesManaged)
	w.raw("</strong> managed nodes · <code>")
	w.text(r.Config)
	w.raw("</code> · generated ")
	w.text(clock(r.GeneratedAt))
	w.raw("\n  </p>\n  <section aria-labelledby=\"h-step\">\n    <h2 id=\"h-step\">Step</h2>\n    <p class=\"filters\" id=\"plugin-filter\">")
	plugin := ""
	if len(opts.Plugins) == 1 {
		plugin = opts.Plugins[0]
	}
	links := []filterLink{{Label: "all plugins", URL: preflightURL(PreflightPath, "", opts.To), Current: plugin == ""}}
	for _, p := range migration.MigratablePlugins {
		links = append(links, filterLink{Label: p, URL: preflightURL(PreflightPath, p, opts.To), Current: plugin == p})
	}
	writeFilterLinks(w, links)
	w.raw("</p>\n    <p class=\"filters\" id=\"step-filter\">")
	steps := []filterLink{{Label: "next step", URL: preflightURL(PreflightPath, plugin, ""), Current: opts.To == ""}}
	for _, m := range migration.Modes {
		steps = append(steps, filterLink{Label: "to " + string(m), URL: preflightURL(PreflightPath, plugin, m), Current: opts.To == m})
	}
	writeFilterLinks(w, steps)
	w.raw("</p>\n    <ul id=\"steps\">")
	for _, s := range r.Steps {
		w.raw("<li><code>")
		w.text(s.Plugin)
		w.raw("</code>: <span class=\"mode mode-")
		w.text(string(s.From))
		w.raw("\">")
		w.text(string(s.From))
		w.raw("</span> → <span class=\"mode mode-")
		w.text(string(s.To))
		w.raw("\">")
		w.text(string(s.To))
		w.raw("</span> (CSI driver <code>")
		w.text(s.Driver)
		w.raw("</code>)</li>")
	}
	w.raw("</ul>\n  </section>\n  <section aria-labelledby=\"h-findings\">\n    <h2 id=\"h-findings\">Findings <span class=\"count\" id=\"findings-count\">")
	w.int(len(r.Findings))
	w.raw("</span></h2>\n    <p class=\"banner\" id=\"verdict\" data-ok=\"")
	w.bool(r.OK)
	w.raw("\">")
	switch {
	case r.OK && len(r.Findings) == 0:
		w.raw("Safe: nothing blocks or changes.")
	case r.OK:
		w.raw("Safe: nothing blocks; ")
		w.int(r.Warnings)
		w.raw(" warnings.")
	default:
		w.raw("Not safe: ")
		w.int(r.Blocking)
		w.raw(" findings block, ")
		w.int(r.Warnings)
		w.raw(" warn. Fix what blocks first.")
	}
	w.raw("</p>\n    ")
	if len(r.Findings) > 0 {
		w.raw("<table id=\"findings\">\n      <thead><tr><th>Severity</th><th>Check</th><th>Plugin</th><th>Object</th><th>Node</th><th>Why</th><th>Fix</th></tr></thead>\n      <tbody>")
		for _, f := range r.Findings {
			w.raw("\n        <tr data-severity=\"")
			w.text(string(f.Severity))
			w.raw("\" data-check=\"")
			w.text(string(f.Check))
			w.raw("\"><td><span class=\"")
			if f.Severity == preflight.Blocks {
				w.raw("problem")
			} else {
				w.raw("mech mech-wait")
			}
			w.raw("\">")
			w.text(string(f.Severity))
			w.raw("</span></td><td class=\"nowrap\">")
			w.text(string(f.Check))
			w.raw("</td><td class=\"nowrap\">")
			w.text(f.Plugin)
			w.raw("</td><td class=\"nowrap\">")
			w.text(f.Object.String())
			w.raw("</td><td class=\"nowrap\">")
			w.text(f.Node)
			w.raw("</td><td class=\"reason\">")
			w.text(f.Why)
			if c := f.StorageClass; c != nil {
				w.raw("<br>translated: provisioner <code>")
				w.text(c.Provisioner)
				w.raw("</code>, parameters <code>")
				for i, k := range sortedParams(c.Parameters) {
					if i > 0 {
						w.raw(", ")
					}
					w.text(k + "=" + c.Parameters[k])
				}
				w.raw("</code>")
			}
			w.raw("</td><td class=\"reason\">")
			w.text(f.Fix)
			w.raw("</td></tr>")
		}
		w.raw("\n      </tbody>\n    </table>")
	}
	w.raw("\n  </section>\n")
	writeFooter(w, PagePath, "rollout", preflightURL(PreflightAPIPath, plugin, opts.To))
}

func sortedParams(p map[string]string) []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// renderExplain writes the explain page: per pod, per volume the chain as `adc explain`
// prints it, one row per link of the chain.
func renderExplain(buf *bytes.Buffer, r explain.Report) {
	w := htmlWriter{buf}
	writeHead(w, "explain "+r.Target.String(), checksRefreshSeconds, checksRefreshSeconds, r.GeneratedAt)
	w.raw("    <a href=\"" + PagePath + "\">← rollout</a> · <strong id=\"target\">")
	w.text(r.Target.String())
	w.raw("</strong> · <code>")
	w.text(r.Config)
	w.raw("</code> · generated ")
	w.text(clock(r.GeneratedAt))
	w.raw("\n  </p>\n")
	if c := r.Controller; c != nil {
		w.raw("  <p class=\"banner\" id=\"controller\">")
		if c.Standby {
			w.raw("This replica is a standby: no controller memory. ")
			w.text(c.Message)
		} else {
			w.raw("With this controller's memory (held pairs, problems, recent operations). Not exposed: ")
			w.text(strings.Join(c.NotExposed, "; "))
		}
		w.raw("</p>\n")
	}
	for _, n := range r.Notes {
		w.raw("  <p class=\"banner\">")
		w.text(n)
		w.raw("</p>\n")
	}
	for _, p := range r.Pods {
		w.raw("  <section class=\"pod\" data-pod=\"")
		w.text(p.Namespace + "/" + p.Name)
		w.raw("\">\n    <h2>Pod <code>")
		w.text(p.Namespace + "/" + p.Name)
		w.raw("</code> on node <code>")
		w.text(p.Node)
		w.raw("</code> <span class=\"count\">")
		w.text(p.Phase)
		w.raw("</span></h2>\n")
		if p.Inactive != "" {
			w.raw("    <p class=\"reason\">")
			w.text(p.Inactive)
			w.raw("</p>\n")
		}
		for _, v := range p.Volumes {
			writeExplainVolume(w, v)
		}
		w.raw("  </section>\n")
	}
	if len(r.Attachments) > 0 {
		w.raw("  <section id=\"attachments\">\n    <h2>Attachments</h2>\n    <table>\n      <tbody>")
		for _, a := range r.Attachments {
			writeExplainRow(w, "node "+a.Node, attachmentText(a))
		}
		w.raw("\n      </tbody>\n    </table>\n  </section>\n")
	}
	writeFooter(w, PagePath, "rollout", explainAPIURL(r.Target))
}

func writeExplainVolume(w htmlWriter, v explain.Volume) {
	w.raw("    <h3>Volume <code>")
	w.text(v.Name)
	w.raw("</code></h3>\n    <table class=\"volume\" data-volume=\"")
	w.text(v.Name)
	w.raw("\" data-mechanism=\"")
	w.text(string(v.Mechanism))
	w.raw("\">\n      <tbody>")
	if v.Claim != "" {
		writeExplainRow(w, "claim", v.Claim+" → "+v.PV)
	}
	decision := string(v.Mechanism)
	if v.WaitCause != "" {
		decision += " (" + string(v.WaitCause) + ")"
	}
	writeExplainRow(w, "decision", decision+": "+v.Reason)
	for _, f := range v.DecidedBy {
		writeExplainRow(w, f.Object, f.Says)
	}
	if v.Here != nil {
		writeExplainRow(w, "here", attachmentText(*v.Here))
	}
	for _, a := range v.Elsewhere {
		writeExplainRow(w, "elsewhere", attachmentText(a))
	}
	if m := v.Controller; m != nil {
		if m.Held != nil {
			writeExplainRow(w, "controller", "held: "+m.Held.Reason)
		} else {
			writeExplainRow(w, "controller", "not held")
		}
		for _, p := range m.Problems {
			writeExplainRow(w, "problem", string(p.Kind)+": "+p.Reason)
		}
		for _, op := range m.Operations {
			result := "ok"
			if op.Error != "" {
				result = op.Error
			}
			writeExplainRow(w, "operation", op.Kind+" on node "+op.Node+" at "+rfc3339(op.Time)+": "+result)
		}
	}
	writeExplainRow(w, "next", v.Next)
	w.raw("\n      </tbody>\n    </table>\n")
}

func writeExplainRow(w htmlWriter, label, value string) {
	w.raw("\n        <tr><th>")
	w.text(label)
	w.raw("</th><td class=\"reason\">")
	w.text(value)
	w.raw("</td></tr>")
}

// attachmentText renders one attachment in a sentence.
func attachmentText(a explain.Attachment) string {
	var b strings.Builder
	b.WriteString("node " + a.Node)
	if a.Exists {
		b.WriteString(", VolumeAttachment " + a.VolumeAttachment)
		if a.Attached {
			b.WriteString(" attached")
		} else {
			b.WriteString(" not attached yet")
		}
		if a.Created != nil {
			b.WriteString(" since " + rfc3339(*a.Created))
		}
	}
	if a.AttachError != "" {
		b.WriteString("; attach error: " + a.AttachError)
	}
	b.WriteString("; listed in node status: " + yesNo(a.ListedInStatus) + "; in use: " + yesNo(a.InUse))
	if len(a.UsedBy) > 0 {
		b.WriteString("; used by " + strings.Join(a.UsedBy, ", "))
	}
	if a.Detach != nil {
		b.WriteString("; detach: " + a.Detach.Why)
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func explainAPIURL(t explain.Target) string {
	q := url.Values{}
	if t.Kind == explain.KindPod {
		q.Set("pod", t.Namespace+"/"+t.Name)
	} else {
		q.Set("pv", t.Name)
	}
	return ExplainAPIPath + "?" + q.Encode()
}
