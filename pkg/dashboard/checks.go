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
//
// Explanations show storage details of one namespace, so each is answered only to a user
// who may get pods in that namespace (and, for a PersistentVolume, get persistentvolumes),
// and at most maxConcurrentExplains at a time: past that, 429.
func RegisterChecks(srv *server.Server, pre PreflightSource, exp ExplainSource) {
	srv.Handle("GET "+PreflightPath, preflightHandler(pre, false))
	srv.Handle("GET "+PreflightAPIPath, preflightHandler(pre, true))
	limit := make(chan struct{}, maxConcurrentExplains)
	srv.Handle("GET "+ExplainPath, explainHandler(exp, false, limit, server.AllowedTo))
	srv.Handle("GET "+ExplainAPIPath, explainHandler(exp, true, limit, server.AllowedTo))
}

// maxConcurrentExplains bounds the explanations computed at once, page and API together:
// each reads a namespace and the cluster-scoped objects, so parallel requests from one
// dashboard user must not load the leader (or, on a standby, the API server).
const maxConcurrentExplains = 4

// accessCheck says whether the request's user may verb the resource in namespace
// (server.AllowedTo; tests pass their own).
type accessCheck func(r *http.Request, verb, group, resource, namespace string) error

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

func explainHandler(source ExplainSource, asJSON bool, limit chan struct{}, allowed accessCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := explainTarget(r)
		if err != nil {
			http.Error(w, "bad explain query: "+err.Error(), http.StatusBadRequest)
			return
		}
		// Before any read: a user who may not see the namespace learns nothing, not even
		// whether the pod exists.
		if t.Kind == explain.KindPV {
			err = allowed(r, "get", "", "persistentvolumes", "")
		} else {
			err = allowed(r, "get", "", "pods", t.Namespace)
		}
		if err != nil {
			accessDenied(w, r, err)
			return
		}
		select {
		case limit <- struct{}{}:
			defer func() { <-limit }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many explanations under way; retry in a moment", http.StatusTooManyRequests)
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
		// A volume's pods are known only once it is read: the user must also be allowed to
		// see their namespace.
		for ns := range podNamespaces(report) {
			if err := allowed(r, "get", "", "pods", ns); err != nil {
				accessDenied(w, r, err)
				return
			}
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

// podNamespaces are the namespaces of the pods a report shows.
func podNamespaces(r explain.Report) map[string]bool {
	out := map[string]bool{}
	for _, p := range r.Pods {
		out[p.Namespace] = true
	}
	return out
}

// accessDenied answers a refused access check: 403, or 503 when no authorizer could answer.
func accessDenied(w http.ResponseWriter, r *http.Request, err error) {
	var access *server.AccessError
	if errors.As(err, &access) && access.Unavailable {
		klog.FromContext(r.Context()).Error(err, "Checking the user's access for an explanation failed")
		http.Error(w, "checking access failed: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	klog.FromContext(r.Context()).V(4).Info("Explanation forbidden", "reason", err.Error())
	http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
}
