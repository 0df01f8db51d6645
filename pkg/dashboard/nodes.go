package dashboard

import (
	"bytes"
	"net/http"
	"net/url"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

// Paths of the node view.
const (
	NodesPath    = Prefix + "/nodes"
	NodesAPIPath = Prefix + "/api/v1/nodes"
)

// maxNodeRows bounds the node view's table; the JSON API always has every node. A thousand
// rows still render well under the page budget (BenchmarkNodesPage).
const maxNodeRows = 1000

// nodesPage is what renderNodes writes for the node view.
type nodesPage struct {
	rollout.NodesReport
	Rows           []nodeRow
	Hidden         int
	Mechanisms     []migration.Mechanism
	PluginLinks    []filterLink
	StateLinks     []filterLink
	RefreshSeconds int
	NoScriptReload int
}

// nodeRow is one node with the state of the filtered plugin.
type nodeRow struct {
	rollout.NodeRollout
	// State is the node's state for the filter's plugin, or "" without a plugin filter.
	State string
}

// filterLink is one choice of a filter, a plain link so the view filters without JavaScript.
type filterLink struct {
	Label, URL string
	Current    bool
}

// nodesURL is the node view's address for a filter.
func nodesURL(f rollout.NodeFilter) string {
	q := url.Values{}
	if f.Plugin != "" {
		q.Set("plugin", f.Plugin)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if len(q) == 0 {
		return NodesPath
	}
	return NodesPath + "?" + q.Encode()
}

var stateLabels = map[string]string{"migrated": "migrated", "not-migrated": "not migrated", "unknown": "not reported"}

func newNodesPage(r rollout.NodesReport) nodesPage {
	p := nodesPage{NodesReport: r, Mechanisms: migration.Mechanisms, RefreshSeconds: refreshSeconds, NoScriptReload: noScriptRefreshSeconds}
	shown, hidden := r.Nodes, 0
	if len(shown) > maxNodeRows {
		shown, hidden = shown[:maxNodeRows], len(shown)-maxNodeRows
	}
	p.Hidden = hidden
	p.Rows = make([]nodeRow, len(shown))
	for i, n := range shown {
		p.Rows[i] = nodeRow{NodeRollout: n}
		if r.Filter.Plugin != "" {
			p.Rows[i].State = n.States[r.Filter.Plugin]
		}
	}
	p.PluginLinks = append(p.PluginLinks, filterLink{Label: "all plugins", URL: nodesURL(rollout.NodeFilter{}), Current: r.Filter.Plugin == ""})
	for _, pl := range migration.MigratablePlugins {
		p.PluginLinks = append(p.PluginLinks, filterLink{Label: pl, URL: nodesURL(rollout.NodeFilter{Plugin: pl, State: r.Filter.State}), Current: r.Filter.Plugin == pl})
	}
	if r.Filter.Plugin != "" {
		p.StateLinks = append(p.StateLinks, filterLink{Label: "all states", URL: nodesURL(rollout.NodeFilter{Plugin: r.Filter.Plugin}), Current: r.Filter.State == ""})
		for _, s := range rollout.NodeStates {
			p.StateLinks = append(p.StateLinks, filterLink{Label: stateLabels[s], URL: nodesURL(rollout.NodeFilter{Plugin: r.Filter.Plugin, State: s}), Current: r.Filter.State == s})
		}
	}
	return p
}

// nodeFilter reads ?plugin= and ?state= and validates them.
func nodeFilter(r *http.Request) (rollout.NodeFilter, error) {
	q := r.URL.Query()
	f := rollout.NodeFilter{Plugin: q.Get("plugin"), State: q.Get("state")}
	return f, f.Validate()
}

func nodesPageHandler(source func() rollout.Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := nodeFilter(r)
		if err != nil {
			http.Error(w, "bad node filter: "+err.Error(), http.StatusBadRequest)
			return
		}
		respond(w, r, "the node view", htmlType, func(buf *bytes.Buffer) error {
			renderNodes(buf, newNodesPage(source().NodesView(f)))
			return nil
		})
	})
}

func nodesAPIHandler(source func() rollout.Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := nodeFilter(r)
		if err != nil {
			http.Error(w, "bad node filter: "+err.Error(), http.StatusBadRequest)
			return
		}
		respond(w, r, "the node view", jsonType, func(buf *bytes.Buffer) error {
			return rollout.RenderNodesJSON(buf, source().NodesView(f))
		})
	})
}
