package dashboard

import (
	"bytes"
	"net/http"
	"strings"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
)

// Prefix starts every path of the dashboard, so that one RBAC rule grants all of it on the
// secure port: nonResourceURLs ["/dashboard", "/dashboard/*"], verb get (ClusterRole
// adc-dashboard-viewer in deploy/kubernetes). The paths must stay clear of the API server's
// own: the built-in ClusterRole system:discovery lets every authenticated user get /api/*
// and /apis/*, so a JSON API under /api/v1/ would be open to every ServiceAccount.
const Prefix = "/dashboard"

// Paths the dashboard serves.
const (
	PagePath   = Prefix + "/"
	APIPath    = Prefix + "/api/v1/rollout"
	StaticPath = Prefix + "/static/"
)

// contentSecurityPolicy allows only the page's own stylesheet, script and fetches: even if
// some value escaped escaping, no inline script could run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Register adds the dashboard to srv: GET /dashboard/ (the page), GET
// /dashboard/api/v1/rollout (the same report as JSON, schema in docs/rollout-api.md), GET
// /dashboard/nodes and /dashboard/api/v1/nodes (the node view, filtered by ?plugin= and
// ?state=), GET /dashboard/static/ (its CSS and JavaScript), and GET / and /dashboard, which
// redirect to the page. source is called once per request and must be safe for concurrent
// use; it returns the report to show, e.g. rollout.FromController of the current
// controller, or rollout.Standby.
func Register(srv *server.Server, source func() rollout.Report) {
	toPage := http.RedirectHandler(PagePath, http.StatusFound)
	srv.Handle("GET /{$}", toPage)
	srv.Handle("GET "+Prefix, toPage)
	srv.Handle("GET "+PagePath+"{$}", pageHandler(source))
	srv.Handle("GET "+APIPath, apiHandler(source))
	srv.Handle("GET "+NodesPath, nodesPageHandler(source))
	srv.Handle("GET "+NodesAPIPath, nodesAPIHandler(source))
	srv.Handle("GET "+StaticPath, staticHandler())
}

func securityHeaders(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
}

// Content types of the dashboard's responses.
const (
	htmlType = "text/html; charset=utf-8"
	jsonType = "application/json; charset=utf-8"
)

// respond renders a response completely before writing it, so a failure mid-way answers a
// clean 500 (naming what failed) instead of half a page.
func respond(w http.ResponseWriter, r *http.Request, what, contentType string, render func(*bytes.Buffer) error) {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		klog.FromContext(r.Context()).Error(err, "Rendering failed", "what", what)
		http.Error(w, "rendering "+what+" failed; see the controller's log", http.StatusInternalServerError)
		return
	}
	securityHeaders(w, contentType)
	_, _ = w.Write(buf.Bytes())
}

func pageHandler(source func() rollout.Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, "the dashboard", htmlType, func(buf *bytes.Buffer) error {
			renderPage(buf, newPage(source()))
			return nil
		})
	})
}

func apiHandler(source func() rollout.Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, "the rollout report", jsonType, func(buf *bytes.Buffer) error {
			return rollout.RenderJSON(buf, source())
		})
	})
}

// staticHandler serves the embedded files, without directory listings.
func staticHandler() http.Handler {
	files := http.StripPrefix(StaticPath, http.FileServer(http.FS(staticFS)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
