package dashboard

// writeReadiness writes the readiness panel of the rollout page: for each plugin in play, the
// verdict on switching it to complete and what blocks it (the nodes that have not reported
// it migrated, the volumes that would change path), then the plugins not started. A standby
// replica has no controller state, so the page leaves the panel out.
func writeReadiness(w htmlWriter, p page) {
	w.raw("\n  <section aria-labelledby=\"h-readiness\">\n" +
		"    <h2 id=\"h-readiness\">Readiness for <code>complete</code></h2>\n" +
		"    <p class=\"legend\">Switching a plugin to <code>complete</code> sends every volume of it through CSI without asking the nodes: safe only when every managed node reports it migrated and no volume would change path. <code>adc status --check-complete PLUGIN</code> gates on the same verdict.</p>\n" +
		"    <div id=\"readiness\">\n    ")
	for _, r := range p.InPlay {
		w.raw("\n      <div class=\"readiness\" data-plugin=\"")
		w.text(r.Plugin)
		w.raw("\">\n        <h3><code>")
		w.text(r.Plugin)
		w.raw("</code> ·\n        ")
		writeReadinessVerdict(w, r)
		w.raw("\n        </h3>\n        ")
		if len(r.BlockersShown) > 0 {
			writeBlockers(w, r)
		}
		w.raw("\n        ")
		if len(r.ChangesShown) > 0 {
			writePathChanges(w, r)
		}
		w.raw("\n      </div>\n    ")
	}
	w.raw("\n    ")
	if len(p.NotStarted) > 0 {
		w.raw(`<p class="empty" id="not-started">Not started (no node migrated, no volume): `)
		for i, pl := range p.NotStarted {
			if i > 0 {
				w.raw(`, `)
			}
			w.raw(`<code>`)
			w.text(pl)
			w.raw(`</code>`)
		}
		w.raw(`.</p>`)
	}
	w.raw("\n    </div>\n  </section>\n  ")
}

// writeReadinessVerdict writes a plugin's verdict and its reason in numbers: skew or not for
// a complete plugin, otherwise safe to switch, or how many nodes and volumes block it.
func writeReadinessVerdict(w htmlWriter, r pluginRow) {
	switch {
	case r.Complete && r.SkewNodes != 0:
		writeVerdict(w, r.Plugin, "verdict", "no", "complete, skew")
		w.raw(` `)
		w.int(r.SkewNodes)
		w.raw(` of `)
		w.int(r.NodesTotal)
		w.raw(" nodes' kubelets have not reported it migrated and still expect the in-tree plugin\n        \n        ")
	case r.Complete:
		writeVerdict(w, r.Plugin, "verdict", "complete", "complete")
		w.raw(" every node reports it migrated\n        ")
	case r.Readiness.Ready:
		writeVerdict(w, r.Plugin, "verdict", "yes", "safe to switch")
		w.raw(` all `)
		w.int(r.NodesTotal)
		w.raw(` nodes migrated, all `)
		w.int(r.VolumesByPath.CSI)
		w.raw(" volumes via CSI\n        ")
	default:
		writeVerdict(w, r.Plugin, "verdict", "no", "not safe yet")
		w.raw(` <span `)
		w.pluginField(r.Plugin, "blockingNodes")
		w.raw(`>`)
		w.int(len(r.Readiness.NodesNotMigrated))
		w.raw(`</span> nodes not migrated, <span `)
		w.pluginField(r.Plugin, "changingVolumes")
		w.raw(`>`)
		w.int(len(r.Readiness.VolumesChangingPath))
		w.raw(`</span> volumes would change path`)
	}
}

// writeBlockers writes the nodes that have not reported a plugin migrated, at most maxRows.
func writeBlockers(w htmlWriter, r pluginRow) {
	w.raw("\n        <table class=\"blockers\">\n" +
		"          <thead><tr><th>Node not migrated</th><th>State</th></tr></thead>\n" +
		"          <tbody>\n          ")
	for _, b := range r.BlockersShown {
		w.raw(`<tr data-blocker-node="`)
		w.text(b.Node)
		w.raw(`" data-state="`)
		w.text(b.State)
		w.raw(`"><td class="nowrap">`)
		w.text(b.Node)
		w.raw(`</td><td><span class="state state-`)
		w.text(b.State)
		w.raw(`">`)
		w.text(b.State)
		w.raw(`</span></td></tr>`)
	}
	w.raw("\n          </tbody>\n        </table>\n        ")
	if r.BlockersHidden != 0 {
		writeMore(w, r.BlockersHidden, "nodes", APIPath)
	}
	w.raw("\n        ")
}

// writePathChanges writes the volumes of a plugin that would change path on the switch to
// complete, at most maxRows.
func writePathChanges(w htmlWriter, r pluginRow) {
	w.raw("\n        <table class=\"changes\">\n" +
		"          <thead><tr><th>Node</th><th>Pod</th><th>Volume</th><th>Path now</th><th>After the switch</th></tr></thead>\n" +
		"          <tbody>\n          ")
	for _, c := range r.ChangesShown {
		w.raw(`<tr data-changing-node="`)
		w.text(c.Node)
		w.raw(`" data-changing-pod="`)
		w.text(c.Pod)
		w.raw(`" data-changing-volume="`)
		w.text(c.Volume)
		w.raw(`"><td class="nowrap">`)
		w.text(c.Node)
		w.raw(`</td><td class="nowrap">`)
		w.text(c.Pod)
		w.raw(`</td><td class="nowrap">`)
		w.text(c.Volume)
		writePV(w, c.PV)
		w.raw(`</td><td><span class="mech mech-`)
		w.text(string(c.From))
		w.raw(`">`)
		w.text(string(c.From))
		w.raw(`</span></td><td>csi</td></tr>`)
	}
	w.raw("\n          </tbody>\n        </table>\n        ")
	if r.ChangesHidden != 0 {
		writeMore(w, r.ChangesHidden, "volumes", APIPath)
	}
	w.raw("\n        ")
}

// writePV writes a pair's PersistentVolume under its volume name, if it has one.
func writePV(w htmlWriter, pv string) {
	if pv != "" {
		w.raw(`<br><span class="driver">`)
		w.text(pv)
		w.raw(`</span>`)
	}
}
