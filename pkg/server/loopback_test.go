package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// --http-addr takes loopback addresses only: plain HTTP has no authentication.
func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		wantErr string // empty: accepted
	}{
		{addr: "127.0.0.1:8080"},
		{addr: "127.0.0.1:0"},
		{addr: "127.1.2.3:8080"},
		{addr: "localhost:8080"},
		{addr: "[::1]:8080"},
		{addr: ":8080", wantErr: "not a loopback address"},
		{addr: "0.0.0.0:8080", wantErr: "not a loopback address"},
		{addr: "[::]:8080", wantErr: "not a loopback address"},
		{addr: "10.0.0.7:8080", wantErr: "not a loopback address"},
		{addr: "adc.example.com:8080", wantErr: "not a loopback address"},
		{addr: "8080", wantErr: "is not host:port"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := CheckLoopback(tc.addr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The loopback listener serves what every listener serves, never the profiles, and only to
// requests for a loopback host name (no DNS rebinding from a web page).
func TestLoopbackHandler(t *testing.T) {
	s := New()
	s.EnableProfiling()
	for _, tc := range []struct {
		name, host, path string
		wantCode         int
	}{
		{"health on localhost", "localhost:8080", "/healthz", http.StatusOK},
		{"metrics on 127.0.0.1", "127.0.0.1:8080", "/metrics", http.StatusOK},
		{"IPv6 loopback", "[::1]:8080", "/livez", http.StatusOK},
		{"no port", "localhost", "/readyz", http.StatusOK},
		{"profiles are not served", "127.0.0.1:8080", "/debug/pprof/", http.StatusNotFound},
		{"nor any profile", "127.0.0.1:8080", "/debug/pprof/cmdline", http.StatusNotFound},
		{"rebound name", "attacker.example:8080", "/metrics", http.StatusMisdirectedRequest},
		{"rebound name on health", "attacker.example", "/healthz", http.StatusMisdirectedRequest},
		{"pod IP", "10.1.2.3:8080", "/metrics", http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			s.LoopbackHandler().ServeHTTP(rec, req)
			if rec.Code != tc.wantCode {
				t.Errorf("GET %s (Host %s) = %d %q, want %d", tc.path, tc.host, rec.Code, rec.Body.String(), tc.wantCode)
			}
		})
	}
}
