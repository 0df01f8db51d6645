package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	s := New()
	healthy := true
	s.AddHealthCheck(Check{Name: "ping", Check: func(*http.Request) error { return nil }})
	s.AddHealthCheck(Check{Name: "leader-election", Check: func(*http.Request) error {
		if healthy {
			return nil
		}
		return errors.New("lease not renewed")
	}})
	s.AddReadyCheck(Check{Name: "informer-sync", Check: func(*http.Request) error { return errors.New("caches not synced") }})

	for _, tc := range []struct {
		name     string
		path     string
		sick     bool
		wantCode int
		wantBody string
	}{
		{"healthy", "/healthz", false, 200, "ok"},
		{"verbose lists checks", "/healthz?verbose", false, 200, "[+]leader-election ok"},
		{"one check alone", "/healthz/leader-election", false, 200, "ok"},
		{"failing check", "/healthz", true, 500, "[-]leader-election failed: lease not renewed"},
		{"failing check alone", "/healthz/leader-election", true, 500, "lease not renewed"},
		{"unknown check", "/healthz/nope", false, 404, "no such check"},
		{"not ready", "/readyz", false, 500, "caches not synced"},
		{"metrics served", "/metrics", false, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			healthy = !tc.sick
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

// The listener is read-only: nothing but GET is served.
func TestOnlyGET(t *testing.T) {
	s := New()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d, want 405", path, rec.Code)
		}
	}
}
