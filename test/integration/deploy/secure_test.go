package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/test/integration/framework"
)

// Roles of deploy/kubernetes/access.yaml, for adc's readers.
const (
	metricsReaderRole   = "adc-metrics-reader"
	dashboardViewerRole = "adc-dashboard-viewer"
	portForwardRole     = "adc-dashboard-port-forward"
)

// The roles for adc's readers grant exactly their paths: get on /metrics for scrapers, get
// on the dashboard's prefix for viewers, and, in adc's namespace, what `kubectl
// port-forward` to the leader needs. None is bound by the manifests.
func TestAccessRoles(t *testing.T) {
	m := loadManifests(t)
	nonResource := func(name string) []rbacv1.PolicyRule {
		if r := m.clusterRole(name); r != nil {
			return r.Rules
		}
		return nil
	}
	pf := m.role(m.Namespace.Name, portForwardRole)
	for _, tc := range []struct {
		name string
		ok   bool
		got  any
	}{
		{"ClusterRole " + metricsReaderRole + " gets /metrics only", slices.EqualFunc(nonResource(metricsReaderRole),
			[]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, equalRule), nonResource(metricsReaderRole)},
		{"ClusterRole " + dashboardViewerRole + " gets the dashboard only", slices.EqualFunc(nonResource(dashboardViewerRole),
			[]rbacv1.PolicyRule{{NonResourceURLs: []string{dashboard.Prefix, dashboard.Prefix + "/*"}, Verbs: []string{"get"}}}, equalRule), nonResource(dashboardViewerRole)},
		{"Role " + portForwardRole + " finds the leader and forwards to its Pod", pf != nil && slices.EqualFunc(pf.Rules, []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get", "create"}},
		}, equalRule), pf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("got %+v", tc.got)
			}
		})
	}
}

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// The adc binary with the Deployment's arguments, as the ServiceAccount with the shipped
// RBAC: its secure port serves the health checks to anyone, answers 401 to a request
// without valid credentials and 403 to a ServiceAccount without a grant, and serves each
// reader role exactly its paths; the profiles (--profiling) need get on /debug/*. The
// TokenReviews and SubjectAccessReviews behind those answers are made as adc's
// ServiceAccount, so checkAudit checks them against the bindings of rbac.yaml. The loopback
// listener for port-forward serves the dashboard without the profiles.
func TestSecurePortAsShipped(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cp := framework.Get(t)
	m := applyManifests(ctx, t)
	admin := cp.Client

	// The readers, with the shipped roles; a role for the profiles, which is not shipped.
	debugRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "deploy-test-debug"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/debug/*"}, Verbs: []string{"get"}}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, debugRole, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const ns = "deploy-readers"
	nobody := framework.NewReader(ctx, t, admin, ns, "nobody")
	scraper := framework.NewReader(ctx, t, admin, ns, "scraper", metricsReaderRole)
	viewer := framework.NewReader(ctx, t, admin, ns, "viewer", dashboardViewerRole)
	profiler := framework.NewReader(ctx, t, admin, ns, "profiler", debugRole.Name)
	framework.WaitAccess(ctx, t, admin, scraper.User(), "/metrics", true)
	framework.WaitAccess(ctx, t, admin, viewer.User(), dashboard.PagePath, true)
	framework.WaitAccess(ctx, t, admin, profiler.User(), "/debug/pprof/", true)

	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	container := m.Deployment.Spec.Template.Spec.Containers[0]
	args := append(append(append([]string{}, container.Command...), container.Args...),
		"--kubeconfig", serviceAccountKubeconfig(t, cp.Config, m.serviceAccountUser()),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--http-addr", "127.0.0.1:0", "--profiling", "--logging-format", "json", "-v", "2")
	previousHolder := leaseHolder(ctx, admin, m.Role.Namespace)
	adcProc := startADC(t, args)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adc output:\n%s", adcProc.out.String())
		}
	})
	base := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	insecure := framework.InsecureTLSClient(t)
	// Ready once it leads and its caches synced: a replica waiting for the Lease is ready
	// too, and turns unready for a moment when it takes the Lease.
	waitForNewLeader(ctx, t, admin, m.Role.Namespace, previousHolder)
	// The Lease is written before the new leader's callback runs: wait for its controller to
	// have synced, or /readyz may still answer as the standby did a moment before.
	framework.Eventually(ctx, t, "adc's controller synced its caches", 30*time.Second, func(context.Context) (bool, string) {
		return strings.Contains(adcProc.out.String(), "Caches synced; reconciling every node"), "not in its log yet"
	})
	framework.Eventually(ctx, t, "GET "+base+"/readyz 200", 30*time.Second, func(ctx context.Context) (bool, string) {
		code, body := framework.GetWithToken(ctx, insecure, base+"/readyz", "")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})

	t.Run("a certificate made in memory for localhost", func(t *testing.T) {
		resp, err := insecure.Get(base + "/livez")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cert := resp.TLS.PeerCertificates[0]
		if !slices.Contains(cert.DNSNames, "localhost") {
			t.Errorf("serving certificate for %v, want localhost", cert.DNSNames)
		}
	})

	// The admin of the test control plane authenticates with its client certificate, which
	// adc verifies against the client CA of ConfigMap kube-system/extension-apiserver-
	// authentication; it is in system:masters, which needs no review (kube-controller-
	// manager's default, without a flag).
	adminClient := framework.ClientWithCertificate(t, cp.Config)
	framework.Eventually(ctx, t, "the admin's client certificate accepted", 30*time.Second, func(ctx context.Context) (bool, string) {
		code, body := framework.GetWithToken(ctx, adminClient, base+"/metrics", "")
		return code == http.StatusOK, fmt.Sprintf("%d %.200s", code, body)
	})

	type who struct {
		name   string
		token  string
		client *http.Client
	}
	anonymous := who{"anonymous", "", insecure}
	nobodyW := who{"ServiceAccount without a grant", nobody.Token, insecure}
	scraperW := who{"scraper (" + metricsReaderRole + ")", scraper.Token, insecure}
	viewerW := who{"viewer (" + dashboardViewerRole + ")", viewer.Token, insecure}
	profilerW := who{"profiler (/debug/*)", profiler.Token, insecure}
	adminW := who{"admin (client certificate, system:masters)", "", adminClient}
	forged := who{"a forged token", "not-a-token", insecure}

	health := []string{"/healthz", "/readyz", "/livez"}
	metricsPaths := []string{"/metrics"}
	dashboardPaths := []string{dashboard.PagePath, dashboard.NodesPath, dashboard.APIPath, dashboard.NodesAPIPath, dashboard.StaticPath + "dashboard.js"}
	debugPaths := []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap?debug=1"}
	// Anonymous only on the health paths: everything else, existing or not, wants credentials.
	notAnonymous := []string{"/", dashboard.Prefix, "/healthz/leader-election", "/readyz/informer-sync", "/nope", "/api/v1/rollout"}

	type expect struct {
		who   who
		paths []string
		code  int
	}
	var cases []expect
	cases = append(cases,
		expect{anonymous, health, http.StatusOK},
		expect{anonymous, metricsPaths, http.StatusUnauthorized},
		expect{anonymous, dashboardPaths, http.StatusUnauthorized},
		expect{anonymous, debugPaths, http.StatusUnauthorized},
		expect{anonymous, notAnonymous, http.StatusUnauthorized},
		expect{forged, metricsPaths, http.StatusUnauthorized},
		expect{nobodyW, health, http.StatusOK},
		expect{nobodyW, metricsPaths, http.StatusForbidden},
		expect{nobodyW, dashboardPaths, http.StatusForbidden},
		expect{nobodyW, debugPaths, http.StatusForbidden},
		// Every authenticated user may get /api/* (the built-in system:discovery role): the
		// reason the dashboard's JSON API moved under /dashboard. adc serves nothing there.
		expect{nobodyW, []string{"/api/v1/rollout", "/api/v1/nodes"}, http.StatusNotFound},
		expect{scraperW, metricsPaths, http.StatusOK},
		expect{scraperW, dashboardPaths, http.StatusForbidden},
		expect{scraperW, debugPaths, http.StatusForbidden},
		expect{viewerW, dashboardPaths, http.StatusOK},
		expect{viewerW, metricsPaths, http.StatusForbidden},
		expect{viewerW, debugPaths, http.StatusForbidden},
		expect{profilerW, debugPaths, http.StatusOK},
		expect{profilerW, metricsPaths, http.StatusForbidden},
		expect{profilerW, dashboardPaths, http.StatusForbidden},
		expect{adminW, append(append(append([]string{}, metricsPaths...), dashboardPaths...), debugPaths...), http.StatusOK},
	)
	for _, c := range cases {
		for _, path := range c.paths {
			t.Run(fmt.Sprintf("%s GET %s", c.who.name, path), func(t *testing.T) {
				code, body := framework.GetWithToken(ctx, c.who.client, base+path, c.who.token)
				if code != c.code {
					t.Errorf("GET %s = %d, want %d; body: %.300s", path, code, c.code, body)
				}
				if code == http.StatusForbidden && !strings.Contains(body, "cannot get path") {
					t.Errorf("403 without the authorizer's reason: %.300s", body)
				}
			})
		}
	}

	t.Run("the loopback listener serves the dashboard, not the profiles", func(t *testing.T) {
		addr := adcProc.loopbackAddr(ctx, t)
		if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
			t.Errorf("plain HTTP on %s, want 127.0.0.1", addr)
		}
		for path, want := range map[string]int{dashboard.PagePath: http.StatusOK, dashboard.APIPath: http.StatusOK, "/healthz": http.StatusOK, "/debug/pprof/": http.StatusNotFound} {
			if code, body := httpGet(ctx, "http://"+addr+path); code != want {
				t.Errorf("GET http://%s%s = %d, want %d: %.200s", addr, path, code, want, body)
			}
		}
	})

	if err := adcProc.stop(20 * time.Second); err != nil {
		t.Errorf("adc after SIGTERM: %v, want exit 0", err)
	}
}

// loopbackAddr returns the address the plain HTTP listener bound, from the JSON log.
func (p *adcProcess) loopbackAddr(ctx context.Context, t *testing.T) string {
	t.Helper()
	var addr string
	framework.Eventually(ctx, t, "the loopback listener's address in the log", 20*time.Second, func(context.Context) (bool, string) {
		sc := bufio.NewScanner(strings.NewReader(p.out.String()))
		for sc.Scan() {
			var line struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == loopbackLogMsg && line.Address != "" {
				addr = line.Address
				return true, ""
			}
		}
		return false, fmt.Sprintf("no JSON log line %q with an address", loopbackLogMsg)
	})
	return addr
}

// loopbackLogMsg is the log line of pkg/server when the plain HTTP listener is up.
const loopbackLogMsg = "Serving plain HTTP on loopback"
