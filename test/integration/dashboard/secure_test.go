package dashboard

import (
	"context"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
	"github.com/migration-aware/adc/test/integration/framework"
)

// secureEndpoint is the controller's secure port as a scraper sees it.
type secureEndpoint struct {
	// Addr is host:port.
	Addr string
	// CAFile is the PEM of the CA that signed the serving certificate.
	CAFile string
}

// serveSecure serves the controller's dashboard and /metrics on a secure port on
// 127.0.0.1:0 the way `adc controller` does (pkg/server): TLS with a certificate for
// 127.0.0.1 and localhost signed by a CA the test makes (--tls-cert-file and
// --tls-private-key-file), delegated authentication and authorization through the test
// control plane (--kubeconfig).
func serveSecure(t *testing.T, rc *rolloutCluster) secureEndpoint {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	// GenerateSelfSignedCertKey returns the serving certificate followed by its CA's.
	var blocks []*pem.Block
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d certificates generated, want the serving one and its CA", len(blocks))
	}
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM, caFile: pem.EncodeToMemory(blocks[1])} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	opts := server.NewOptions()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.SecureServing.Listener = l
	opts.SecureServing.ServerCert.CertKey.CertFile, opts.SecureServing.ServerCert.CertKey.KeyFile = certFile, keyFile
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := opts.SecureConfig(framework.Get(t).KubeconfigPath)
	if err != nil {
		t.Fatalf("setting up the secure port: %v", err)
	}
	srv := server.New()
	dashboard.Register(srv, func() rollout.Report { return rollout.FromController(rc.ctrl, time.Now()) })
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeSecure(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serving the secure port: %v", err)
		}
	})
	return secureEndpoint{Addr: cfg.Addr().String(), CAFile: caFile}
}

// shippedClusterRole creates ClusterRole name of deploy/kubernetes/access.yaml on the test
// control plane, as `kubectl apply -k deploy/kubernetes` would.
func shippedClusterRole(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	role, err := framework.ShippedClusterRole(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := framework.Get(t).Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRole %s: %v", name, err)
	}
}

// serviceMonitorEndpoint is the scrape endpoint of the ServiceMonitor example
// (deploy/prometheus/servicemonitor.yaml).
type serviceMonitorEndpoint struct {
	Port            string `json:"port"`
	Scheme          string `json:"scheme"`
	Path            string `json:"path"`
	BearerTokenFile string `json:"bearerTokenFile"`
	TLSConfig       struct {
		InsecureSkipVerify bool `json:"insecureSkipVerify"`
	} `json:"tlsConfig"`
}

// serviceMonitorExample reads the one endpoint of deploy/prometheus/servicemonitor.yaml.
func serviceMonitorExample(t *testing.T) serviceMonitorEndpoint {
	t.Helper()
	path := filepath.Join(framework.DeployDir(), "..", "prometheus", "servicemonitor.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sm struct {
		Kind string `json:"kind"`
		Spec struct {
			Endpoints []serviceMonitorEndpoint `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &sm); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if sm.Kind != "ServiceMonitor" || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%s: %s with %d endpoints, want a ServiceMonitor with one", path, sm.Kind, len(sm.Spec.Endpoints))
	}
	return sm.Spec.Endpoints[0]
}
