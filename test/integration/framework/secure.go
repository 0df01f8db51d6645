package framework

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago, for a process whose
// port is a flag that cannot be 0 (adc's --secure-port turns the secure port off with 0).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DeployDir is deploy/kubernetes in the source tree this package was built from.
func DeployDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "kubernetes")
}

// ShippedClusterRole reads ClusterRole name from deploy/kubernetes/access.yaml, the roles for
// adc's readers (adc-metrics-reader, adc-dashboard-viewer), strictly parsed.
func ShippedClusterRole(name string) (*rbacv1.ClusterRole, error) {
	path := filepath.Join(DeployDir(), "access.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no ClusterRole %s", path, name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil || tm.Kind != "ClusterRole" {
			continue
		}
		r := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(doc, r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Name == name {
			return r, nil
		}
	}
}

// Reader is a ServiceAccount that reads adc's secure port with a bearer token.
type Reader struct {
	Namespace, Name, Token string
}

// User is the reader's user name as the API server authenticates it.
func (r Reader) User() string { return "system:serviceaccount:" + r.Namespace + ":" + r.Name }

// NewReader creates ServiceAccount namespace/name (and the namespace), binds each
// ClusterRole to it with a ClusterRoleBinding (the roles must exist), and returns it with a
// token from the TokenRequest API, as a Pod of it would mount. The bindings are deleted when
// the test ends.
func NewReader(ctx context.Context, t testing.TB, client kubernetes.Interface, namespace, name string, clusterRoles ...string) Reader {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
	for _, role := range clusterRoles {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: role + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		created, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("binding ClusterRole %s to %s/%s: %v", role, namespace, name, err)
		}
		t.Cleanup(func() {
			_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		})
	}
	expiry := int64(3600)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", namespace, name, err)
	}
	return Reader{Namespace: namespace, Name: name, Token: tr.Status.Token}
}

// WaitAccess waits until the API server's authorizer answers allowed for user's get of the
// non-resource path, as adc's SubjectAccessReview will ask it: RBAC sees a new binding a
// moment after it is created, and adc caches a denial for 10 s
// (--authorization-webhook-cache-unauthorized-ttl).
func WaitAccess(ctx context.Context, t testing.TB, client kubernetes.Interface, user, path string, allowed bool) {
	t.Helper()
	Eventually(ctx, t, fmt.Sprintf("%s may get %s: %v", user, path, allowed), 20*time.Second, func(ctx context.Context) (bool, string) {
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user,
			Groups:                []string{"system:serviceaccounts", "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed == allowed, fmt.Sprintf("allowed %v (%s)", sar.Status.Allowed, sar.Status.Reason)
	})
}

// InsecureTLSClient is an HTTPS client that does not verify the server's certificate, as the
// kubelet's probes and a Prometheus with insecure_skip_verify do with adc's self-signed one.
func InsecureTLSClient(t testing.TB) *http.Client {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// ClientWithCertificate is an HTTPS client that presents cfg's client certificate (the test
// control plane's admin has one, in system:masters) and does not verify adc's self-signed
// serving certificate.
func ClientWithCertificate(t testing.TB, cfg *rest.Config) *http.Client {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil || tlsCfg == nil || len(cfg.CertData) == 0 {
		t.Fatalf("the admin has no client certificate (%v)", err)
	}
	tlsCfg.InsecureSkipVerify, tlsCfg.RootCAs = true, nil
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// GetWithToken GETs url with client, with "Authorization: Bearer token" unless token is
// empty, and returns the status code and body (code 0 and the error when there is no
// answer).
func GetWithToken(ctx context.Context, client *http.Client, url, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}
