package dashboard

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/preflight"
	"github.com/migration-aware/adc/pkg/server"
)

// Paths of the preflight and explain pages and their JSON, beside the rollout page's (under
// whatever prefix PagePath has, so one rule grants the whole dashboard).
const (
	PreflightPath    = PagePath + "preflight"
	PreflightAPIPath = PagePath + "api/v1/preflight"
	ExplainPath      = PagePath + "explain"
	ExplainAPIPath   = PagePath + "api/v1/explain"
)

// checksRefreshSeconds is how often the preflight and explain pages refresh themselves:
// each refresh reads the cluster, so far less often than the rollout page.
const checksRefreshSeconds = 60

// PreflightSource computes a preflight of the step the options describe (Config is the
// source's own; Plugins and To come from the request). It must be safe for concurrent use.
type PreflightSource func(ctx context.Context, opts preflight.Options) (preflight.Report, error)

// ExplainSource explains a target. It must be safe for concurrent use; an error wrapping
// explain.ErrNotFound answers 404.
type ExplainSource func(ctx context.Context, t explain.Target) (explain.Report, error)

// RegisterChecks adds to srv GET PreflightPath?plugin=P&to=M (the page; plugin repeatable,
// both optional as for `adc preflight`) and PreflightAPIPath (the same report as JSON), and
// GET ExplainPath?pod=NAMESPACE/NAME or ?pv=NAME and ExplainAPIPath. Both read the cluster
// on each request (their sources may cache), so the pages refresh only every minute.
func RegisterChecks(srv *server.Server, pre PreflightSource, exp ExplainSource) {
	srv.Handle("GET "+PreflightPath, preflightHandler(pre, false))
	srv.Handle("GET "+PreflightAPIPath, preflightHandler(pre, true))
	srv.Handle("GET "+ExplainPath, explainHandler(exp, false))
	srv.Handle("GET "+ExplainAPIPath, explainHandler(exp, true))
}

// preflightOptions reads ?plugin= (repeatable or comma-separated) and ?to=.
func preflightOptions(r *http.Request) (preflight.Options, error) {
	q := r.URL.Query()
	var opts preflight.Options
	for _, v := range q["plugin"] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			name, err := preflight.ParsePlugin(p)
			if err != nil {
				return opts, err
			}
			opts.Plugins = append(opts.Plugins, name)
		}
	}
	to, err := preflight.ParseStep(q.Get("to"))
	opts.To = to
	return opts, err
}

func preflightHandler(source PreflightSource, asJSON bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, err := preflightOptions(r)
		if err != nil {
			http.Error(w, "bad preflight query: "+err.Error(), http.StatusBadRequest)
			return
		}
		report, err := source(r.Context(), opts)
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Preflight failed")
			http.Error(w, "preflight failed: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if asJSON {
			respond(w, r, "the preflight report", jsonType, func(buf *bytes.Buffer) error { return preflight.RenderJSON(buf, report) })
			return
		}
		respond(w, r, "the preflight page", htmlType, func(buf *bytes.Buffer) error {
			renderPreflight(buf, report, opts)
			return nil
		})
	})
}

// explainTarget reads ?pod=NAMESPACE/NAME or ?pv=NAME.
func explainTarget(r *http.Request) (explain.Target, error) {
	q := r.URL.Query()
	switch {
	case q.Get("pod") != "" && q.Get("pv") != "":
		return explain.Target{}, errors.New("give either ?pod=NAMESPACE/NAME or ?pv=NAME, not both")
	case q.Get("pod") != "":
		return explain.ParseTarget(explain.KindPod, q.Get("pod"))
	case q.Get("pv") != "":
		return explain.ParseTarget(explain.KindPV, q.Get("pv"))
	}
	return explain.Target{}, errors.New("say what to explain: ?pod=NAMESPACE/NAME or ?pv=NAME")
}

func explainHandler(source ExplainSource, asJSON bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := explainTarget(r)
		if err != nil {
			http.Error(w, "bad explain query: "+err.Error(), http.StatusBadRequest)
			return
		}
		report, err := source(r.Context(), t)
		switch {
		case errors.Is(err, explain.ErrNotFound):
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			klog.FromContext(r.Context()).Error(err, "Explain failed", "target", t.String())
			http.Error(w, "explain failed: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if asJSON {
			respond(w, r, "the explanation", jsonType, func(buf *bytes.Buffer) error { return explain.RenderJSON(buf, report) })
			return
		}
		respond(w, r, "the explain page", htmlType, func(buf *bytes.Buffer) error {
			renderExplain(buf, report)
			return nil
		})
	})
}
