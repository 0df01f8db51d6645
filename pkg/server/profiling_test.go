package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// With profiling on, every pprof endpoint answers; without it, none exists. The CPU profile
// and the trace are asked for with an already cancelled request, so they return at once.
func TestProfiling(t *testing.T) {
	paths := []string{
		"/debug/pprof/",
		"/debug/pprof/heap?debug=1",
		"/debug/pprof/goroutine?debug=1",
		"/debug/pprof/cmdline",
		"/debug/pprof/symbol",
		"/debug/pprof/profile?seconds=1",
		"/debug/pprof/trace?seconds=1",
	}
	for _, tc := range []struct {
		name     string
		enabled  bool
		wantCode int
	}{
		{"enabled", true, http.StatusOK},
		{"disabled", false, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			if tc.enabled {
				s.EnableProfiling()
			}
			for _, path := range paths {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
				if rec.Code != tc.wantCode {
					t.Errorf("GET %s = %d %q, want %d", path, rec.Code, rec.Body.String(), tc.wantCode)
				}
			}
		})
	}
}
