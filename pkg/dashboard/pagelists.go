package dashboard

import (
	"time"

	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/rollout"
)

// writeHeld writes the held pairs (at most maxRows) with their reason, retries, next retry
// and age, or a line saying there are none.
func writeHeld(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-held\">\n    <h2 id=\"h-held\">Held pairs <span class=\"count\" id=\"held-count\">")
	w.int(len(p.Held))
	w.raw("</span></h2>\n    ")
	if len(p.Held) == 0 {
		w.raw(`<p class="empty" id="held">No held pairs.</p>`)
		w.raw("\n  </section>")
		return
	}
	w.raw("\n    <table id=\"held\">\n" +
		"      <thead><tr><th>Node</th><th>Pod</th><th>Volume</th><th>Mechanism</th><th>Reason</th><th class=\"n\">Retries</th><th>Next retry</th><th>Held since</th></tr></thead>\n" +
		"      <tbody>\n      \n      ")
	now := p.GeneratedAt
	for _, h := range p.HeldShown {
		w.raw("\n        <tr data-node=\"")
		w.text(h.Node)
		w.raw(`" data-pod="`)
		w.text(h.Pod)
		w.raw(`" data-volume="`)
		w.text(h.Volume)
		w.raw("\">\n          <td class=\"nowrap\">")
		w.text(h.Node)
		w.raw(`</td><td class="nowrap">`)
		w.text(h.Pod)
		w.raw(`</td><td class="nowrap">`)
		w.text(h.Volume)
		writePV(w, h.PV)
		w.raw("</td>\n          <td><span class=\"mech mech-")
		w.text(string(h.Mechanism))
		w.raw(`">`)
		w.text(string(h.Mechanism))
		w.raw("</span></td>\n          <td class=\"reason\">")
		w.text(h.Reason)
		w.raw("</td>\n          <td class=\"n\" data-field=\"retries\">")
		w.int(h.Retries)
		w.raw("</td>\n          <td class=\"nowrap\">")
		w.text(due(h.NextRetry, now))
		w.raw("</td>\n          <td class=\"nowrap\">")
		w.text(relative(h.Since, now))
		w.raw("</td>\n        </tr>\n      ")
	}
	w.raw("\n      </tbody>\n    </table>\n    ")
	if p.HeldHidden != 0 {
		writeMore(w, p.HeldHidden, "held pairs", APIPath)
	}
	w.raw("\n    \n  </section>")
}

// writeProblems writes the problems (version skew, multi-attach blocks; at most maxRows) and
// the node notes (at most maxRows).
func writeProblems(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-problems\">\n    <h2 id=\"h-problems\">Problems <span class=\"count\" id=\"problems-count\">")
	w.int(len(p.Problems))
	w.raw("</span></h2>\n    ")
	if len(p.Problems) == 0 {
		w.raw(`<p class="empty" id="problems">No version skew, no multi-attach blocks.</p>`)
	} else {
		w.raw("\n    <table id=\"problems\">\n" +
			"      <thead><tr><th>Problem</th><th>Node</th><th>Pod</th><th>Volume</th><th>Reason</th></tr></thead>\n" +
			"      <tbody>\n      ")
		for _, pr := range p.ProblemsShown {
			w.raw("\n        <tr data-kind=\"")
			w.text(string(pr.Kind))
			w.raw(`"><td class="nowrap"><span class="problem problem-`)
			w.text(string(pr.Kind))
			w.raw(`">`)
			w.text(string(pr.Kind))
			w.raw(`</span></td><td class="nowrap">`)
			w.text(pr.Node)
			w.raw(`</td><td class="nowrap">`)
			w.text(pr.Pod)
			w.raw(`</td><td class="nowrap">`)
			w.text(pr.Volume)
			w.raw(`</td><td class="reason">`)
			w.text(pr.Reason)
			w.raw("</td></tr>\n      ")
		}
		w.raw("\n      </tbody>\n    </table>\n    ")
		if p.ProblemsHidden != 0 {
			writeMore(w, p.ProblemsHidden, "problems", APIPath)
		}
		w.raw("\n    ")
	}
	w.raw("\n    ")
	if len(p.Notes) > 0 {
		w.raw("\n    <h3>Node notes</h3>\n    <ul class=\"notes\" id=\"notes\">\n      ")
		for _, n := range p.NotesShown {
			w.raw(`<li data-node="`)
			w.text(n.Node)
			w.raw(`"><strong>`)
			w.text(n.Node)
			w.raw(`</strong>: <span class="note">`)
			w.text(n.Message)
			w.raw(`</span></li>`)
		}
		w.raw("\n    </ul>\n    ")
		if p.NotesHidden != 0 {
			writeMore(w, p.NotesHidden, "notes", APIPath)
		}
		w.raw("\n    ")
	}
	w.raw("\n  </section>")
}

// writeFlips writes the nodes that recently reported a plugin migrated or no longer migrated
// (a rollback), or why there are none: a cluster report has no controller to see them.
func writeFlips(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-flips\">\n    <h2 id=\"h-flips\">Recent node flips <span class=\"count\" id=\"flips-count\">")
	w.int(len(p.RecentFlips))
	w.raw("</span></h2>\n    ")
	switch {
	case len(p.RecentFlips) > 0:
		w.raw("\n    <table id=\"flips\">\n" +
			"      <thead><tr><th>Seen</th><th>Node</th><th>Plugin</th><th>Now</th></tr></thead>\n" +
			"      <tbody>\n      \n      ")
		for _, f := range p.RecentFlips {
			w.raw("\n        <tr data-migrated=\"")
			w.bool(f.Migrated)
			w.raw("\">\n          ")
			writeSeen(w, f.Time, p.GeneratedAt)
			w.raw("\n          <td class=\"nowrap\">")
			w.text(f.Node)
			w.raw(`</td><td class="nowrap">`)
			w.text(f.Plugin)
			w.raw("</td>\n          <td>")
			if f.Migrated {
				w.raw(`migrated (CSI)`)
			} else {
				w.raw(`<span class="rollback">no longer migrated (in-tree)</span>`)
			}
			w.raw("</td>\n        </tr>\n      ")
		}
		w.raw("\n      </tbody>\n    </table>\n    ")
	case p.Source == rollout.SourceCluster:
		w.raw("<p class=\"empty\" id=\"flips\">Flips are only seen by a running controller.</p>\n    ")
	default:
		w.raw(`<p class="empty" id="flips">No node has flipped a plugin since this controller started leading.</p>`)
	}
	w.raw("\n  </section>")
}

// writeOperations writes the recent attach and detach operations, newest first, with their
// duration and error, or why there are none.
func writeOperations(w htmlWriter, p page) {
	w.raw("  <section aria-labelledby=\"h-ops\">\n    <h2 id=\"h-ops\">Recent attach and detach operations <span class=\"count\" id=\"operations-count\">")
	w.int(len(p.Operations))
	w.raw("</span></h2>\n    ")
	switch {
	case len(p.Operations) > 0:
		w.raw("\n    <table id=\"operations\">\n" +
			"      <thead><tr><th>Finished</th><th>Operation</th><th>Node</th><th>Volume</th><th>Plugin</th><th>Migrated</th><th class=\"n\">Duration</th><th>Result</th></tr></thead>\n" +
			"      <tbody>\n      \n      ")
		for _, o := range p.Operations {
			w.raw("\n        <tr data-kind=\"")
			w.text(o.Kind)
			w.raw(`" class="`)
			if o.Error != "" {
				w.raw(`failed`)
			}
			w.raw("\">\n          ")
			writeSeen(w, o.Time, p.GeneratedAt)
			w.raw("\n          <td>")
			w.text(o.Kind)
			w.raw(`</td><td class="nowrap">`)
			w.text(o.Node)
			w.raw(`</td><td class="volume">`)
			w.text(o.Volume)
			w.raw(`</td><td class="nowrap">`)
			w.text(o.Plugin)
			w.raw("</td>\n          <td>")
			if o.Migrated {
				w.raw(`yes`)
			} else {
				w.raw(`no`)
			}
			w.raw("</td>\n          <td class=\"n\" data-field=\"durationSeconds\" data-value=\"")
			w.float(o.DurationSeconds)
			w.raw(`">`)
			w.text(formatSeconds(o.DurationSeconds))
			w.raw("</td>\n          <td class=\"reason\">")
			if o.Error != "" {
				w.raw(`<span class="error">`)
				w.text(o.Error)
				w.raw(`</span>`)
			} else {
				w.raw(`ok`)
			}
			w.raw("</td>\n        </tr>\n      ")
		}
		w.raw("\n      </tbody>\n    </table>\n    ")
	case p.Source == rollout.SourceCluster:
		w.raw("<p class=\"empty\" id=\"operations\">Operations are only known to a running controller.</p>\n    ")
	default:
		w.raw(`<p class="empty" id="operations">No attach or detach finished yet.</p>`)
	}
	w.raw("\n  </section>")
}

// writeSeen writes the cell of when something happened: its age relative to the report, and
// the exact time as a tooltip.
func writeSeen(w htmlWriter, t, now time.Time) {
	w.raw(`<td class="nowrap" title="`)
	w.text(rfc3339(t))
	w.raw(`">`)
	w.text(relative(&t, now))
	w.raw(`</td>`)
}

// writeNodeLoss writes the volumes of nodes that are not Ready (at most maxRows) with what
// their detach rule will do, or nothing when every node is Ready.
func writeNodeLoss(w htmlWriter, p page) {
	if len(p.NodeLoss) == 0 {
		return
	}
	w.raw("  <section aria-labelledby=\"h-nodeloss\">\n    <h2 id=\"h-nodeloss\">Volumes of nodes not Ready <span class=\"count\" id=\"nodeloss-count\">")
	w.int(len(p.NodeLoss))
	w.raw("</span></h2>\n    <table id=\"nodeloss\">\n" +
		"      <thead><tr><th>Node</th><th>Volume</th><th>Rule</th><th>Detach</th><th>Reason</th></tr></thead>\n      <tbody>")
	for i, n := range p.NodeLoss {
		if i == maxRows {
			break
		}
		w.raw("\n        <tr data-node=\"")
		w.text(n.Node)
		w.raw("\">\n          <td class=\"nowrap\">")
		w.text(n.Node)
		w.raw(`</td><td class="nowrap">`)
		w.text(n.Name())
		w.raw(`</td><td class="nowrap">`)
		w.text(n.Rule)
		w.raw(`</td><td class="nowrap">`)
		w.text(nodeLossDetach(n, p.GeneratedAt))
		w.raw(`</td><td class="reason">`)
		w.text(n.Reason)
		w.raw("</td>\n        </tr>")
	}
	w.raw("\n      </tbody>\n    </table>\n    ")
	if len(p.NodeLoss) > maxRows {
		writeMore(w, len(p.NodeLoss)-maxRows, "volumes of nodes not Ready", APIPath)
	}
	w.raw("\n  </section>")
}

// nodeLossDetach says when the rule detaches the volume: plan's words, with a relative time.
func nodeLossDetach(n rollout.NodeLossVolume, now time.Time) string {
	if n.DetachAt != nil && !n.DetachNow && !n.Held {
		return due(n.DetachAt, now)
	}
	return plan.NodeLossOutlook(n)
}
