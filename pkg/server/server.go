// Package server is adc's one HTTP listener: health and readiness checks, Prometheus
// metrics from the component-base legacy registry (so the same metrics appear inside
// kube-controller-manager when adc is embedded there), and whatever pages other packages
// register, such as the rollout dashboard. Nothing served here changes cluster state.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Check is a named health or readiness check; nil error means healthy.
type Check struct {
	Name  string
	Check func(*http.Request) error
}

// Server serves /healthz, /healthz/<check>, /readyz, /readyz/<check>, /metrics and
// registered handlers.
type Server struct {
	mux *http.ServeMux

	mu     sync.RWMutex
	health []Check
	ready  []Check
}

// New returns a server with the built-in endpoints registered.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.mux.Handle("GET /metrics", legacyregistry.Handler())
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

// Handler returns the server's handler, for tests and for hosts with their own listener.
func (s *Server) Handler() http.Handler { return s.mux }

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

// Listen binds addr (":8080", or "127.0.0.1:0" for a free port in tests) and returns the
// bound address.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s (--http-addr): %w", addr, err)
	}
	return l, nil
}

// Serve serves on l until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	logger := klog.FromContext(ctx)
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	logger.Info("Serving HTTP", "address", l.Addr().String())
	select {
	case err := <-errs:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving HTTP on %s: %w", l.Addr(), err)
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	}
}
