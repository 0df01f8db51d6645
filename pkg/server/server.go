// Package server is adc's HTTP serving: health and readiness checks, Prometheus metrics
// from the component-base legacy registry (so the same metrics appear inside
// kube-controller-manager when adc is embedded there), Go's runtime profiles when asked, and
// whatever pages other packages register, such as the rollout dashboard. Nothing served
// here changes cluster state.
//
// Everything is served the way kube-controller-manager serves it: on a secure port (TLS,
// delegated authentication with TokenReview, client certificates and the front proxy's
// headers, delegated authorization with SubjectAccessReview; kube-controller-manager's flags
// and handler chain over k8s.io/apiserver's authenticator packages, without its generic
// server; see secure.go), where only the health paths are anonymous. A plain HTTP listener exists only
// when asked for, and only on a loopback address (loopback.go): the laptop and the demo, and
// the person who reaches it through `kubectl port-forward`, which the API server authorizes.
// It never serves the profiles.
package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/component-base/metrics/legacyregistry"
)

// Check is a named health or readiness check; nil error means healthy.
type Check struct {
	Name  string
	Check func(*http.Request) error
	// Info, when set, says more about a passing check in ?verbose output: a condition that
	// does not make the process unready but that an operator must see (adc fenced by another
	// attach/detach controller).
	Info func() string
}

// Server serves /healthz, /healthz/<check>, /readyz, /readyz/<check>, /livez, /metrics,
// registered handlers and, once EnableProfiling is called, /debug/pprof/.
type Server struct {
	// mux holds what every listener serves.
	mux *http.ServeMux
	// debug holds /debug/, which only the secure port serves: a CPU profile or a trace keeps
	// a core busy for as long as it is asked to, so it needs authorization.
	debug *http.ServeMux
	// all routes /debug/ to debug and everything else to mux.
	all *http.ServeMux

	mu     sync.RWMutex
	health []Check
	ready  []Check
}

// New returns a server with the built-in endpoints registered.
func New() *Server {
	s := &Server{mux: http.NewServeMux(), debug: http.NewServeMux(), all: http.NewServeMux()}
	s.all.Handle("/debug/", s.debug)
	s.all.Handle("/", s.mux)
	s.mux.Handle("GET /metrics", legacyregistry.Handler())
	// /livez as kube-controller-manager serves it (an anonymous path by default): the same
	// checks as /healthz.
	s.mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, s.checks(false), "") })
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, s.checks(false), "") })
	s.mux.HandleFunc("GET /healthz/{check}", func(w http.ResponseWriter, r *http.Request) {
		s.serveChecks(w, r, s.checks(false), r.PathValue("check"))
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, s.checks(true), "") })
	s.mux.HandleFunc("GET /readyz/{check}", func(w http.ResponseWriter, r *http.Request) {
		s.serveChecks(w, r, s.checks(true), r.PathValue("check"))
	})
	return s
}

// AddHealthCheck adds a liveness check, served alone at /healthz/<name> and in /healthz.
func (s *Server) AddHealthCheck(c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health = append(s.health, c)
}

// AddReadyCheck adds a readiness check, served alone at /readyz/<name> and in /readyz.
func (s *Server) AddReadyCheck(c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = append(s.ready, c)
}

// Handle registers a handler for a pattern (net/http ServeMux syntax).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Handler returns everything the server serves, /debug/ included, without authentication
// or authorization: what the secure port serves behind them (ServeSecure), for tests and
// for hosts that put their own filters in front.
func (s *Server) Handler() http.Handler { return s.all }

func (s *Server) checks(ready bool) []Check {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ready {
		return append([]Check(nil), s.ready...)
	}
	return append([]Check(nil), s.health...)
}

// serveChecks answers like the Kubernetes components do: 200 "ok", or 500 with one line per
// failed check; ?verbose lists every check.
func (s *Server) serveChecks(w http.ResponseWriter, r *http.Request, checks []Check, only string) {
	var lines []string
	failed := false
	found := only == ""
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].Name < checks[j].Name })
	for _, c := range checks {
		if only != "" && c.Name != only {
			continue
		}
		found = true
		if err := c.Check(r); err != nil {
			failed = true
			lines = append(lines, fmt.Sprintf("[-]%s failed: %v", c.Name, err))
		} else if info := checkInfo(c); info != "" {
			lines = append(lines, fmt.Sprintf("[+]%s ok: %s", c.Name, info))
		} else {
			lines = append(lines, fmt.Sprintf("[+]%s ok", c.Name))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case !found:
		http.Error(w, "no such check: "+only, http.StatusNotFound)
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		fmt.Fprintln(w, "check failed")
	case r.URL.Query().Has("verbose"):
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		fmt.Fprintln(w, "ok")
	default:
		fmt.Fprint(w, "ok")
	}
}

// checkInfo returns a check's Info on one line, or "".
func checkInfo(c Check) string {
	if c.Info == nil {
		return ""
	}
	return strings.Join(strings.Fields(c.Info()), " ")
}
