package dashboard

import "bytes"

// renderNodes writes the node view (GET /nodes) for p: the filter links, then one row per
// node (at most maxNodeRows) with its kubelet, what it reports and its volumes per
// mechanism. Every value from the report goes through htmlWriter.text or href, so node
// names and kubelet versions are shown as text.
func renderNodes(buf *bytes.Buffer, p nodesPage) {
	w := htmlWriter{buf}
	writeHead(w, "managed nodes", p.RefreshSeconds, p.NoScriptReload, p.GeneratedAt)
	w.raw("    <a href=\"" + PagePath + "\">← rollout</a> ·\n    source <strong id=\"source\">")
	w.text(string(p.Source))
	w.raw("</strong> ·\n    node source <strong id=\"node-source\">")
	w.text(string(p.NodeSource))
	w.raw("</strong> ·\n    <strong id=\"nodes-shown\">")
	w.int(len(p.Nodes))
	w.raw(`</strong> of <strong id="nodes-managed">`)
	w.int(p.NodesManaged)
	w.raw("</strong> managed nodes ·\n    generated ")
	w.text(clock(p.GeneratedAt))
	w.raw("\n  </p>\n  ")
	if p.Standby {
		w.raw(`<p class="banner standby" id="standby">`)
		w.text(p.Message)
		w.raw(`</p>`)
	}
	w.raw("\n  <section aria-labelledby=\"h-filter\">\n    <h2 id=\"h-filter\">Filter</h2>\n    <p class=\"filters\" id=\"plugin-filter\">")
	writeFilterLinks(w, p.PluginLinks)
	w.raw("</p>\n    ")
	if len(p.StateLinks) > 0 {
		w.raw(`<p class="filters" id="state-filter">`)
		writeFilterLinks(w, p.StateLinks)
		w.raw(`</p>`)
	}
	w.raw("\n  </section>\n  <section aria-labelledby=\"h-nodes\">\n    <h2 id=\"h-nodes\">Nodes")
	if p.Filter.Plugin != "" {
		w.raw(` · <code>`)
		w.text(p.Filter.Plugin)
		w.raw(`</code>`)
	}
	if p.Filter.State != "" {
		w.raw(` · `)
		w.text(p.Filter.State)
	}
	w.raw(` <span class="count" id="nodes-count">`)
	w.int(len(p.Nodes))
	w.raw("</span></h2>\n    ")
	if len(p.Rows) > 0 {
		writeNodeTable(w, p)
	} else {
		w.raw(`<p class="empty" id="nodes">No managed node matches.</p>`)
	}
	w.raw("\n  </section>\n")
	writeFooter(w, PagePath, "rollout", NodesAPIPath)
}

// writeFilterLinks writes a filter's choices as plain links, the current one marked for
// the stylesheet and for screen readers.
func writeFilterLinks(w htmlWriter, links []filterLink) {
	for _, l := range links {
		w.raw(`<a href="`)
		w.href(l.URL)
		if l.Current {
			w.raw(`" class="filter current" aria-current="page">`)
		} else {
			w.raw(`" class="filter">`)
		}
		w.text(l.Label)
		w.raw(`</a> `)
	}
}

// writeNodeTable writes the node rows, with a state column when the view is filtered on a
// plugin, and the pointer to the JSON when rows were cut.
func writeNodeTable(w htmlWriter, p nodesPage) {
	w.raw("\n    <table id=\"nodes\">\n      <thead><tr><th>Node</th><th>Kubelet</th><th>Reports via</th>")
	if p.Filter.Plugin != "" {
		w.raw(`<th>State</th>`)
	}
	w.raw(`<th>Migrated plugins</th>`)
	for _, m := range p.Mechanisms {
		w.raw(`<th class="n">`)
		w.text(string(m))
		w.raw(`</th>`)
	}
	w.raw("</tr></thead>\n      <tbody>\n      ")
	for _, r := range p.Rows {
		w.raw("\n        <tr data-node=\"")
		w.text(r.Name)
		w.raw("\">\n          <td class=\"nowrap\" data-field=\"name\">")
		w.text(r.Name)
		w.raw("</td>\n          <td class=\"nowrap\" data-field=\"kubelet\">")
		if r.KubeletVersion != "" {
			w.text(r.KubeletVersion)
		} else {
			w.raw(`-`)
		}
		w.raw("</td>\n          <td data-field=\"source\">")
		w.text(r.Source)
		w.raw("</td>\n          ")
		if r.State != "" {
			w.raw(`<td data-field="state"><span class="state state-`)
			w.text(r.State)
			w.raw(`">`)
			w.text(r.State)
			w.raw(`</span></td>`)
		}
		w.raw("\n          <td class=\"plugins\" data-field=\"migrated\">")
		for i, pl := range r.MigratedPlugins {
			if i > 0 {
				w.raw(`, `)
			}
			w.raw(`<code>`)
			w.text(pl)
			w.raw(`</code>`)
		}
		if len(r.MigratedPlugins) == 0 {
			w.raw(`-`)
		}
		w.raw("</td>\n          ")
		for _, m := range p.Mechanisms {
			w.raw(`<td class="n" data-field="volumes-`)
			w.text(string(m))
			w.raw(`">`)
			w.int(r.VolumesByMechanism[m])
			w.raw(`</td>`)
		}
		w.raw("\n        </tr>\n      ")
	}
	w.raw("\n      </tbody>\n    </table>\n    ")
	if p.Hidden != 0 {
		writeMore(w, p.Hidden, "nodes", NodesAPIPath)
	}
	w.raw("\n    ")
}
