package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	certutil "k8s.io/client-go/util/cert"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2/ktesting"
)

// testCA signs client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// file holds the CA's certificate in PEM, as --client-ca-file would.
	file string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".crt")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, file: file}
}

// client returns a client certificate for user cn in groups orgs.
func (ca *testCA) client(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Client certificates of --client-ca-file name their user (CN) and groups (O); a front proxy
// with a certificate of --requestheader-client-ca-file and an allowed name may name the user
// in X-Remote-User; system:masters needs no review; a certificate of another CA is refused.
// Refusals are Kubernetes Status objects, and nothing is cacheable.
func TestSecurePortCertificates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clientCA, proxyCA, otherCA := newTestCA(t, "client-ca"), newTestCA(t, "front-proxy-ca"), newTestCA(t, "other-ca")
	api := &fakeAPIServer{allowed: func(user, path string) bool {
		return path == "/metrics" && (user == "alice" || user == "bob")
	}}
	opts := NewOptions()
	opts.Authentication.SkipInClusterLookup = true
	opts.Authentication.ClientCAFile = clientCA.file
	opts.Authentication.RequestHeader.ClientCAFile = proxyCA.file
	opts.Authentication.RequestHeader.AllowedNames = []string{"front-proxy"}
	cfg := serveSecureForTest(ctx, t, api, opts, New())
	url := "https://" + cfg.Addr().String() + "/metrics"

	for _, tc := range []struct {
		name     string
		cert     *tls.Certificate
		header   map[string]string
		wantCode int
		// wantReviews is how many SubjectAccessReviews the request may cause.
		wantReviews int
	}{
		{name: "a client certificate with the grant", cert: ptr(clientCA.client(t, "alice")), wantCode: http.StatusOK, wantReviews: 1},
		{name: "a client certificate without the grant", cert: ptr(clientCA.client(t, "mallory")), wantCode: http.StatusForbidden, wantReviews: 1},
		{name: "system:masters is not reviewed", cert: ptr(clientCA.client(t, "root", "system:masters")), wantCode: http.StatusOK},
		{name: "a certificate of another CA", cert: ptr(otherCA.client(t, "alice")), wantCode: http.StatusUnauthorized},
		{name: "the front proxy names a user with the grant", cert: ptr(proxyCA.client(t, "front-proxy")),
			header: map[string]string{"X-Remote-User": "bob"}, wantCode: http.StatusOK, wantReviews: 1},
		{name: "the front proxy names a user without the grant", cert: ptr(proxyCA.client(t, "front-proxy")),
			header: map[string]string{"X-Remote-User": "mallory", "X-Remote-Group": "ops"}, wantCode: http.StatusForbidden, wantReviews: 1},
		{name: "a proxy whose name is not allowed", cert: ptr(proxyCA.client(t, "other-proxy")),
			header: map[string]string{"X-Remote-User": "bob"}, wantCode: http.StatusUnauthorized},
		{name: "the headers without the proxy's certificate", header: map[string]string{"X-Remote-User": "bob"}, wantCode: http.StatusUnauthorized},
		{name: "a user's certificate cannot name another user", cert: ptr(clientCA.client(t, "mallory")),
			header: map[string]string{"X-Remote-User": "bob"}, wantCode: http.StatusForbidden, wantReviews: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsCfg := &tls.Config{InsecureSkipVerify: true}
			if tc.cert != nil {
				tlsCfg.Certificates = []tls.Certificate{*tc.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
			defer client.CloseIdleConnections()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			api.mu.Lock()
			before := api.access
			api.mu.Unlock()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("GET /metrics = %d, want %d", resp.StatusCode, tc.wantCode)
			}
			api.mu.Lock()
			reviews := api.access - before
			api.mu.Unlock()
			if reviews > tc.wantReviews {
				t.Errorf("%d SubjectAccessReviews, want at most %d", reviews, tc.wantReviews)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-cache, private" {
				t.Errorf("Cache-Control %q, want no-cache, private", got)
			}
			if resp.StatusCode == http.StatusOK {
				return
			}
			var status metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&status); err != nil || status.Kind != "Status" || int(status.Code) != tc.wantCode {
				t.Errorf("body %+v (%v), want a Status with code %d", status, err, tc.wantCode)
			}
			if tc.wantCode == http.StatusForbidden && !strings.Contains(status.Message, `cannot get path "/metrics"`) {
				t.Errorf("403 message %q, want it to say what was refused", status.Message)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The TLS flags reach the handshake: --tls-min-version refuses older clients,
// --disable-http2-serving keeps clients on HTTP/1.1, and HTTP/2 is served otherwise.
func TestSecurePortTLSFlags(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	for _, tc := range []struct {
		name         string
		set          func(*SecureServingOptions)
		clientMaxTLS uint16
		wantProto    string
		wantRefused  bool
	}{
		{name: "HTTP/2 by default", set: func(*SecureServingOptions) {}, wantProto: "HTTP/2.0"},
		{name: "--disable-http2-serving", set: func(s *SecureServingOptions) { s.DisableHTTP2Serving = true }, wantProto: "HTTP/1.1"},
		{name: "--tls-min-version=VersionTLS13 refuses TLS 1.2", set: func(s *SecureServingOptions) { s.MinTLSVersion = "VersionTLS13" },
			clientMaxTLS: tls.VersionTLS12, wantRefused: true},
		{name: "TLS 1.1 is refused by default", set: func(*SecureServingOptions) {}, clientMaxTLS: tls.VersionTLS11, wantRefused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := NewOptions()
			opts.Authentication.SkipInClusterLookup = true
			tc.set(opts.SecureServing)
			cfg := serveSecureForTest(ctx, t, &fakeAPIServer{allowed: func(string, string) bool { return false }}, opts, New())
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MaxVersion: tc.clientMaxTLS}, ForceAttemptHTTP2: true}
			client := &http.Client{Transport: tr}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+cfg.Addr().String()+"/healthz", nil)
			resp, err := client.Do(req)
			if tc.wantRefused {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("a client with at most TLS %x was served", tc.clientMaxTLS)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Proto != tc.wantProto {
				t.Errorf("GET /healthz = %d over %s, want 200 over %s", resp.StatusCode, resp.Proto, tc.wantProto)
			}
		})
	}
}

// A handler that panics is answered 500 and the port keeps serving.
func TestSecurePortRecoversPanics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	opts := NewOptions()
	opts.Authentication.SkipInClusterLookup = true
	opts.Authorization.AlwaysAllowPaths = append(opts.Authorization.AlwaysAllowPaths, "/boom")
	srv := New()
	srv.Handle("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	cfg := serveSecureForTest(ctx, t, &fakeAPIServer{allowed: func(string, string) bool { return false }}, opts, srv)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		path string
		want int
	}{{"/boom", http.StatusInternalServerError}, {"/healthz", http.StatusOK}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+cfg.Addr().String()+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s = %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}

// Wrong flag values are refused at start, naming the flag.
func TestSecureOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		set        func(*Options)
	}{
		{"a port out of range", "--secure-port", func(o *Options) { o.SecureServing.BindPort = 70000 }},
		{"a certificate without its key", "--tls-private-key-file", func(o *Options) { o.SecureServing.ServerCert.CertKey.CertFile = "tls.crt" }},
		{"an unknown TLS version", "--tls-min-version", func(o *Options) { o.SecureServing.MinTLSVersion = "VersionTLS14" }},
		{"an unknown cipher suite", "--tls-cipher-suites", func(o *Options) { o.SecureServing.CipherSuites = []string{"TLS_NOPE"} }},
		{"an empty header name", "--requestheader-group-headers", func(o *Options) { o.Authentication.RequestHeader.GroupHeaders = []string{" "} }},
		{"a UID header without X-Remote-Uid", "--requestheader-uid-headers", func(o *Options) { o.Authentication.RequestHeader.UIDHeaders = []string{"X-Uid"} }},
		{"a negative cache TTL", "--authorization-webhook-cache", func(o *Options) { o.Authorization.DenyCacheTTL = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.set(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if err := NewOptions().Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

// The secure port's reviews are retried when the API server is overloaded or failing, as
// k8s.io/apiserver's webhooks retry them, and not when it refused the request.
func TestRetryReview(t *testing.T) {
	backoff := defaultReviewBackoff()
	backoff.Duration = time.Millisecond
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"first answer", nil, 1, false},
		{"429 then an answer", []error{tooManyRequests()}, 2, false},
		{"500 every time", []error{internalError(), internalError(), internalError(), internalError(), internalError(), internalError()}, 5, true},
		{"403 is not retried", []error{forbidden()}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := retryReview(context.Background(), backoff, func(context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls || (err != nil) != tc.wantErr {
				t.Errorf("%d calls, error %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}

func tooManyRequests() error {
	return apierrors.NewTooManyRequests("slow down", 0)
}

func internalError() error {
	return apierrors.NewInternalError(errors.New("etcd is down"))
}

func forbidden() error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("no RBAC"))
}

// --tls-sni-cert-key serves its certificate to clients asking for its name, and the default
// certificate to the others.
func TestSecurePortSNI(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("adc.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "sni.crt"), filepath.Join(dir, "sni.key")
	for f, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := NewOptions()
	opts.Authentication.SkipInClusterLookup = true
	opts.SecureServing.SNICertKeys = []cliflag.NamedCertKey{{CertFile: certFile, KeyFile: keyFile}}
	cfg := serveSecureForTest(ctx, t, &fakeAPIServer{allowed: func(string, string) bool { return false }}, opts, New())
	for _, tc := range []struct{ serverName, wantDNS string }{{"adc.example", "adc.example"}, {"localhost", "localhost"}} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: tc.serverName}}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+cfg.Addr().String()+"/healthz", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		client.CloseIdleConnections()
		if names := resp.TLS.PeerCertificates[0].DNSNames; !slices.Contains(names, tc.wantDNS) {
			t.Errorf("asking for %s: served a certificate for %v, want %s", tc.serverName, names, tc.wantDNS)
		}
	}
}
