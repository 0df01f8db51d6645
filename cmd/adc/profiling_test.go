package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/spf13/pflag"

	"github.com/migration-aware/adc/pkg/server"
)

// --profiling is off by default and leaves every pprof path 404; --profiling serves
// /debug/pprof/ (on the secure port's handler only: see pkg/server); --contention-profiling
// turns on mutex (and block) profiling, only with --profiling.
func TestProfilingFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		wantCode       int
		wantContention bool
	}{
		{"default is off", nil, http.StatusNotFound, false},
		{"on", []string{"--profiling"}, http.StatusOK, false},
		{"contention", []string{"--profiling", "--contention-profiling"}, http.StatusOK, true},
		{"contention without profiling", []string{"--contention-profiling"}, http.StatusNotFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(0))
			defer runtime.SetBlockProfileRate(0)
			var p profilingFlags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			p.add(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			srv := server.New()
			p.install(srv)
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
				ctx, cancel := context.WithCancel(context.Background())
				cancel() // profile and trace return at once
				rec := httptest.NewRecorder()
				srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
				if rec.Code != tc.wantCode {
					t.Errorf("GET %s = %d, want %d", path, rec.Code, tc.wantCode)
				}
			}
			if got := runtime.SetMutexProfileFraction(-1) > 0; got != tc.wantContention {
				t.Errorf("mutex profiling on = %v, want %v", got, tc.wantContention)
			}
		})
	}
}
