package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2/ktesting"
)

// fakeAPIServer answers TokenReviews and SubjectAccessReviews the way kube-apiserver would
// for a few fixed tokens and grants, and counts them.
type fakeAPIServer struct {
	// users by bearer token
	users map[string]string
	// allowed reports whether user may get path.
	allowed func(user, path string) bool

	mu                   sync.Mutex
	tokenReviews, access int
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.tokenReviews++
		f.mu.Unlock()
		if name, ok := f.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: name, Groups: []string{"system:authenticated"}}}
		}
		tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenReview"
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.access++
		f.mu.Unlock()
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = nr != nil && nr.Verb == "get" && f.allowed(sar.Spec.User, nr.Path)
		sar.APIVersion, sar.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

// serveSecureForTest serves srv on a secure port on 127.0.0.1 built from opts, with api as
// the API server of the reviews, until the test ends.
func serveSecureForTest(ctx context.Context, t *testing.T, api http.Handler, opts *Options, srv *Server) *SecureConfig {
	t.Helper()
	apiServer := httptest.NewTLSServer(api)
	t.Cleanup(apiServer.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.SecureServing.Listener = l
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := opts.SecureConfig(kubeconfigFor(t, apiServer.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeSecure(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeSecure: %v", err)
		}
	})
	return cfg
}

// kubeconfigFor writes a kubeconfig for the fake API server.
func kubeconfigFor(t *testing.T, url string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fake"] = &clientcmdapi.Cluster{Server: url, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["fake"] = &clientcmdapi.AuthInfo{Token: "adc's own token"}
	cfg.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "fake"}
	cfg.CurrentContext = "fake"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The secure port, built from the flags' options with delegated authentication and
// authorization through a (fake) API server: TLS with a certificate made in memory, health
// anonymous, 401 without valid credentials, 403 without the grant, 200 with it, and the
// profiles only behind authorization.
func TestSecurePort(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	api := &fakeAPIServer{
		users: map[string]string{"viewer-token": "viewer", "scraper-token": "scraper", "nobody-token": "nobody", "profiler-token": "profiler"},
		allowed: func(user, path string) bool {
			switch user {
			case "viewer":
				return path == "/dashboard" || strings.HasPrefix(path, "/dashboard/")
			case "scraper":
				return path == "/metrics"
			case "profiler":
				return strings.HasPrefix(path, "/debug/")
			}
			return false
		},
	}
	opts := NewOptions()
	opts.Authentication.SkipInClusterLookup = true // the fake serves no ConfigMap
	srv := New()
	srv.EnableProfiling()
	srv.Handle("GET /dashboard/{$}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "the page") }))
	cfg := serveSecureForTest(ctx, t, api, opts, srv)

	base := "https://" + cfg.Addr().String()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(client.CloseIdleConnections)
	for _, tc := range []struct {
		name, token, path string
		wantCode          int
	}{
		{"health without a token", "", "/healthz", http.StatusOK},
		{"readiness without a token", "", "/readyz", http.StatusOK},
		{"liveness without a token", "", "/livez", http.StatusOK},
		{"metrics without a token", "", "/metrics", http.StatusUnauthorized},
		{"dashboard without a token", "", "/dashboard/", http.StatusUnauthorized},
		{"profiles without a token", "", "/debug/pprof/", http.StatusUnauthorized},
		{"a check alone is not anonymous", "", "/healthz/ping", http.StatusUnauthorized},
		{"metrics with a bad token", "forged", "/metrics", http.StatusUnauthorized},
		{"metrics without the grant", "nobody-token", "/metrics", http.StatusForbidden},
		{"metrics for the scraper", "scraper-token", "/metrics", http.StatusOK},
		{"dashboard for the scraper", "scraper-token", "/dashboard/", http.StatusForbidden},
		{"dashboard for the viewer", "viewer-token", "/dashboard/", http.StatusOK},
		{"metrics for the viewer", "viewer-token", "/metrics", http.StatusForbidden},
		{"profiles for the viewer", "viewer-token", "/debug/pprof/", http.StatusForbidden},
		{"profiles with /debug/*", "profiler-token", "/debug/pprof/", http.StatusOK},
		{"health with a token", "viewer-token", "/healthz", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("GET %s = %d, want %d", tc.path, resp.StatusCode, tc.wantCode)
			}
			if resp.TLS == nil {
				t.Errorf("GET %s was not served over TLS", tc.path)
			}
		})
	}
	// Answers are cached (--authentication-token-webhook-cache-ttl and
	// --authorization-webhook-cache-*-ttl, 10s): the same token on the same path is reviewed once.
	api.mu.Lock()
	before := api.tokenReviews + api.access
	api.mu.Unlock()
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer scraper-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	api.mu.Lock()
	after := api.tokenReviews + api.access
	api.mu.Unlock()
	if after != before {
		t.Errorf("3 more scrapes with a reviewed token made %d more reviews, want 0 (cached)", after-before)
	}
}

// The flags are kube-controller-manager's, with adc's port and a certificate made in memory.
func TestOptionsDefaults(t *testing.T) {
	o := NewOptions()
	if o.SecureServing.BindPort != DefaultSecurePort || !o.SecureServing.BindAddress.IsUnspecified() {
		t.Errorf("secure port %s:%d, want every interface on %d", o.SecureServing.BindAddress, o.SecureServing.BindPort, DefaultSecurePort)
	}
	if o.SecureServing.ServerCert.CertDirectory != "" {
		t.Errorf("--cert-dir %q, want empty (a certificate made in memory)", o.SecureServing.ServerCert.CertDirectory)
	}
	if got := strings.Join(o.Authorization.AlwaysAllowPaths, ","); got != "/healthz,/readyz,/livez" {
		t.Errorf("--authorization-always-allow-paths %s, want /healthz,/readyz,/livez", got)
	}
	if o.HTTPAddr != "" {
		t.Errorf("--http-addr %q, want none", o.HTTPAddr)
	}
	o.HTTPAddr = "0.0.0.0:8080"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("--http-addr 0.0.0.0:8080 validates with %v, want refused", err)
	}
	o.HTTPAddr = ""
	o.SecureServing.BindPort = 0
	if cfg, err := o.SecureConfig(""); cfg != nil || err != nil {
		t.Errorf("--secure-port=0 gives %v, %v; want no secure port", cfg, err)
	}
}
