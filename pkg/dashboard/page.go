package dashboard

import (
	"bytes"

	"github.com/migration-aware/adc/pkg/rollout"
)

// renderPage writes the rollout page (GET /) for p: the meta line, the rollout table, the
// readiness panel, the mechanism tiles, then the held pairs, problems, flips and operations.
// Every value from the report goes through htmlWriter.text or href, so cluster data is shown
// as text.
func renderPage(buf *bytes.Buffer, p page) {
	w := htmlWriter{buf}
	writeHead(w, "CSI migration rollout", p.RefreshSeconds, p.NoScriptReload, p.GeneratedAt)
	w.raw("    source <strong id=\"source\">")
	w.text(string(p.Source))
	w.raw("</strong> ·\n    node source <strong id=\"node-source\">")
	w.text(string(p.NodeSource))
	w.raw("</strong> ·\n    <strong id=\"nodes-managed\">")
	w.int(p.NodesManaged)
	w.raw("</strong> managed nodes ·\n    generated ")
	w.text(clock(p.GeneratedAt))
	w.raw("\n  </p>\n  ")
	switch {
	case p.Standby:
		w.raw(`<p class="banner standby" id="standby">`)
		w.text(p.Message)
		w.raw(`</p>`)
	case p.Message != "":
		w.raw(`<p class="banner">`)
		w.text(p.Message)
		w.raw(`</p>`)
	}
	if o := p.OtherController; o != nil && o.Fenced {
		// adc writes nothing while another attach/detach controller does: the first thing an
		// operator must see.
		w.raw(`<p class="banner standby" id="other-controller" role="alert">`)
		w.text(o.Message)
		w.raw(`</p>`)
	}
	w.raw("\n\n")
	writePluginTable(w, p)
	w.raw("\n\n  ")
	if !p.Standby {
		writeReadiness(w, p)
	}
	w.raw("\n\n")
	writeMechanisms(w, p)
	w.raw("\n\n")
	writeHeld(w, p)
	writeNodeLoss(w, p)
	w.raw("\n\n")
	writeProblems(w, p)
	w.raw("\n\n")
	writeFlips(w, p)
	w.raw("\n\n")
	writeOperations(w, p)
	w.raw("\n")
	writeFooter(w, NodesPath, "nodes", APIPath)
}

// writePluginTable writes the rollout section: one row per plugin with its mode, its bar (or,
// for a complete plugin, its skew warning), its node counts linking to the node view, its
// volumes by path and its readiness.
func writePluginTable(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-rollout\">\n" +
		"    <h2 id=\"h-rollout\">Rollout per in-tree plugin</h2>\n" +
		"    <table class=\"rollout\" id=\"plugins\">\n" +
		"      <thead><tr><th>Plugin</th><th>Mode</th><th class=\"barcol\">Nodes migrated</th><th class=\"n\">Migrated</th><th class=\"n\">Not migrated</th><th class=\"n\">Unknown</th><th class=\"n\">Total</th><th>Volumes by path</th><th>Complete?</th></tr></thead>\n" +
		"      <tbody>\n      ")
	for _, r := range p.Plugins {
		w.raw("\n        <tr data-plugin=\"")
		w.text(r.Plugin)
		w.raw("\">\n          <td><code>")
		w.text(r.Plugin)
		w.raw(`</code><br><span class="driver">→ `)
		w.text(r.Driver)
		w.raw("</span></td>\n          <td><span class=\"mode mode-")
		w.text(string(r.Mode))
		w.raw(`" title="`)
		w.text(r.ModeHint)
		w.raw(`" `)
		w.pluginField(r.Plugin, "mode")
		w.raw(`>`)
		w.text(string(r.Mode))
		w.raw("</span></td>\n          <td class=\"barcol\">\n            ")
		if r.Complete {
			writeSkew(w, r)
		} else {
			writeBar(w, r)
		}
		w.raw("\n          </td>\n          ")
		writeNodeCount(w, r.Plugin, "nodesMigrated", "migrated", r.NodesMigrated)
		w.raw("\n          ")
		writeNodeCount(w, r.Plugin, "nodesNotMigrated", "not-migrated", r.NodesNotMigrated)
		w.raw("\n          ")
		writeNodeCount(w, r.Plugin, "nodesUnknown", "unknown", r.NodesUnknown)
		w.raw("\n          <td class=\"n\" ")
		w.pluginField(r.Plugin, "nodesTotal")
		w.raw(`>`)
		w.int(r.NodesTotal)
		w.raw("</td>\n          <td class=\"paths nowrap\"><strong ")
		w.pluginField(r.Plugin, "volumesCSI")
		w.raw(`>`)
		w.int(r.VolumesByPath.CSI)
		w.raw(`</strong> of <span `)
		w.pluginField(r.Plugin, "volumesTotal")
		w.raw(`>`)
		w.int(r.VolumesByPath.Total)
		w.raw("</span> via CSI<br>\n            <span class=\"driver\">in-tree <span ")
		w.pluginField(r.Plugin, "volumesInTree")
		w.raw(`>`)
		w.int(r.VolumesByPath.InTree)
		w.raw(`</span> · held <span `)
		w.pluginField(r.Plugin, "volumesHeld")
		w.raw(`>`)
		w.int(r.VolumesByPath.Held)
		w.raw("</span></span></td>\n          <td class=\"nowrap\">")
		switch {
		case p.Standby:
			w.raw(`-`)
		case r.Complete:
			writeVerdict(w, r.Plugin, "readiness", "complete", "complete")
		case r.Readiness.Ready:
			writeVerdict(w, r.Plugin, "readiness", "yes", "ready")
		default:
			writeVerdict(w, r.Plugin, "readiness", "no", "not ready")
		}
		w.raw("</td>\n        </tr>\n      ")
	}
	w.raw("\n      </tbody>\n    </table>\n" +
		"    <p class=\"legend\"><span class=\"key migrated\"></span>migrated <span class=\"key not\"></span>not migrated <span class=\"key unknown\"></span>unknown (not reported yet: adc holds these nodes' volumes) · a <code>complete</code> plugin shows the nodes whose kubelet has not reported it migrated (version skew) instead of a bar</p>\n" +
		"  </section>")
}

// writeSkew writes a complete plugin's bar cell: the nodes whose kubelet has not reported it
// migrated, which adc no longer consults, so they are a warning rather than progress.
func writeSkew(w htmlWriter, r pluginRow) {
	w.raw("\n            ")
	if r.SkewNodes != 0 {
		w.raw(`<p class="skew-warning" `)
		w.pluginField(r.Plugin, "skew")
		w.raw(` title="mode complete: adc sends every volume through CSI; these kubelets still expect the in-tree plugin">skew: <strong `)
		w.pluginField(r.Plugin, "skewNodes")
		w.raw(`>`)
		w.int(r.SkewNodes)
		w.raw(`</strong> of `)
		w.int(r.NodesTotal)
		w.raw(" nodes not migrated</p>\n            ")
	} else {
		w.raw(`<p class="all-migrated" `)
		w.pluginField(r.Plugin, "skew")
		w.raw(`>all `)
		w.int(r.NodesTotal)
		w.raw(` nodes migrated</p>`)
	}
	w.raw("\n            ")
}

// writeBar writes the SVG bar of a plugin's nodes: migrated, not migrated and unknown
// segments side by side in a 100-unit view box, and the migrated percentage.
func writeBar(w htmlWriter, r pluginRow) {
	w.raw("\n            <svg class=\"bar\" viewBox=\"0 0 100 10\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"")
	w.int(r.NodesMigrated)
	w.raw(` of `)
	w.int(r.NodesTotal)
	w.raw(" nodes migrated\">\n" +
		"              <rect class=\"track\" x=\"0\" y=\"0\" width=\"100\" height=\"10\"></rect>\n" +
		"              <rect class=\"seg-migrated\" x=\"0\" y=\"0\" width=\"")
	w.text(num(r.MigratedPct))
	w.raw(`" height="10"><title>`)
	w.int(r.NodesMigrated)
	w.raw(" migrated</title></rect>\n              <rect class=\"seg-not\" x=\"")
	w.text(num(r.MigratedPct))
	w.raw(`" y="0" width="`)
	w.text(num(r.NotMigratedPct))
	w.raw(`" height="10"><title>`)
	w.int(r.NodesNotMigrated)
	w.raw(" not migrated</title></rect>\n              <rect class=\"seg-unknown\" x=\"")
	w.text(num(r.MigratedPct + r.NotMigratedPct))
	w.raw(`" y="0" width="`)
	w.text(num(r.UnknownPct))
	w.raw(`" height="10"><title>`)
	w.int(r.NodesUnknown)
	w.raw(" unknown</title></rect>\n            </svg>\n            <span class=\"pct\">")
	w.text(num(r.MigratedPct))
	w.raw("%</span>\n            ")
}

// writeNodeCount writes one node count cell, linking to the node view filtered on the plugin
// and state, so the number leads to the nodes behind it.
func writeNodeCount(w htmlWriter, plugin, field, state string, n int) {
	w.raw(`<td class="n" `)
	w.pluginField(plugin, field)
	w.raw(`><a class="nodes-link" href="`)
	w.href(nodesURL(rollout.NodeFilter{Plugin: plugin, State: state}))
	w.raw(`">`)
	w.int(n)
	w.raw(`</a></td>`)
}

// writeVerdict writes a readiness badge: class ready-<kind>, the words, and the data
// attributes the script and the tests find it by.
func writeVerdict(w htmlWriter, plugin, field, kind, words string) {
	w.raw(`<span class="ready ready-`)
	w.text(kind)
	w.raw(`" `)
	w.pluginField(plugin, field)
	w.raw(`>`)
	w.text(words)
	w.raw(`</span>`)
}

// writeMechanisms writes one tile per mechanism with its pair count.
func writeMechanisms(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-mech\">\n    <h2 id=\"h-mech\">Volumes by mechanism <span class=\"count\" id=\"pairs-count\">")
	w.int(p.Pairs)
	w.raw("</span></h2>\n    <ul class=\"tiles\" id=\"mechanisms\">\n    ")
	for _, m := range p.Mechanisms {
		w.raw("\n      <li class=\"tile mech-")
		w.text(string(m.Mechanism))
		w.raw(`" title="`)
		w.text(m.Hint)
		w.raw(`"><span class="value" data-mechanism="`)
		w.text(string(m.Mechanism))
		w.raw(`" data-field="volumes">`)
		w.int(m.Count)
		w.raw(`</span><span class="label">`)
		w.text(string(m.Mechanism))
		w.raw("</span></li>\n    ")
	}
	w.raw("\n    </ul>\n  </section>")
}

// pluginField writes the data-plugin and data-field attributes that name a cell of a
// plugin, for the page's script (which swaps values in place) and the tests.
func (w htmlWriter) pluginField(plugin, field string) {
	w.raw(`data-plugin="`)
	w.text(plugin)
	w.raw(`" data-field="`)
	w.text(field)
	w.raw(`"`)
}

// writeMore writes the pointer under a cut list: how many more entries the JSON at jsonPath
// has.
func writeMore(w htmlWriter, hidden int, what, jsonPath string) {
	w.raw(`<p class="more">… and `)
	w.int(hidden)
	w.raw(` more `)
	w.text(what)
	w.raw(`; <a href="`)
	w.href(jsonPath)
	w.raw(`">the JSON</a> lists all.</p>`)
}
