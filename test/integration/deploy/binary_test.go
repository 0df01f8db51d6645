package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/ktesting"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/test/integration/framework"
)

// leaseName is the Lease `adc controller` elects on by default (--leader-elect-lease-name),
// the one name the Role lets it get and update.
const leaseName = "adc"

// The adc binary, with the Deployment's arguments and a kubeconfig of the ServiceAccount,
// takes the Lease in adc-system, becomes ready, attaches a volume without any forbidden
// request, and on SIGTERM exits 0 and releases the Lease.
func TestBinaryLeadsAsServiceAccount(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cp := framework.Get(t)
	m := applyManifests(ctx, t)
	leaseNS := m.Role.Namespace
	previousHolder := leaseHolder(ctx, cp.Client, leaseNS)

	// Exactly the Deployment's arguments, then what only differs outside a Pod.
	container := m.Deployment.Spec.Template.Spec.Containers[0]
	securePort, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append(append([]string{}, container.Command...), container.Args...),
		"--kubeconfig", serviceAccountKubeconfig(t, cp.Config, m.serviceAccountUser()),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(securePort),
		"--http-addr", "127.0.0.1:0", "--logging-format", "json", "-v", "2")
	// The in-process controller of the other tests streams its informers' lists (client-go's
	// WatchListClient, on by default: RBAC verb watch); the binary lists them the way client-go
	// does against an API server that does not stream lists (verb list), so the suite uses,
	// and checkAudit checks, both of the role's informer verbs.
	adcProc := startADC(t, args, "KUBE_FEATURE_WatchListClient=false")

	s := newScenario(ctx, t)
	startAttacher(ctx, t)

	waitForNewLeader(ctx, t, cp.Client, leaseNS, previousHolder)

	addr := adcProc.loopbackAddr(ctx, t)
	for _, path := range []string{"/readyz", "/healthz", "/healthz/leader-election"} {
		framework.Eventually(ctx, t, "GET "+path+" 200", 20*time.Second, func(ctx context.Context) (bool, string) {
			code, body := httpGet(ctx, "http://"+addr+path)
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
	}
	// The kubelet's probes: HTTPS on the secure port, anonymous, certificate not verified.
	insecure := framework.InsecureTLSClient(t)
	for _, path := range []string{"/readyz", "/healthz"} {
		url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort)) + path
		framework.Eventually(ctx, t, "probe GET "+url+" 200", 20*time.Second, func(ctx context.Context) (bool, string) {
			code, body := framework.GetWithToken(ctx, insecure, url, "")
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
	}

	handle := s.ns + "-vol"
	name, unique := vaName(handle, testDriver, s.node), csiUnique(testDriver, handle)
	s.pod("app", s.csiVolume("data", handle))
	s.eventually("VolumeAttachment "+name+" attached and listed in node status", 30*time.Second, s.attachedAndListed(name, unique))

	// A DetachPolicy: the binary reads it and writes its verdict into its status, as the
	// ServiceAccount (update detachpolicies/status).
	policy := &detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-policy"}, Spec: detachv1alpha1.DetachPolicySpec{
		Volumes: detachv1alpha1.VolumeSelector{Drivers: []string{testDriver}}, Timeout: "10m"}}
	u, err := detachv1alpha1.ToUnstructured(policy)
	if err != nil {
		t.Fatal(err)
	}
	policies := cp.Dynamic.Resource(detachv1alpha1.GroupVersionResource)
	if _, err := policies.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DetachPolicy: %v", err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
	framework.Eventually(ctx, t, "DetachPolicy "+policy.Name+" judged valid by the binary", 20*time.Second, func(ctx context.Context) (bool, string) {
		got, err := policies.Get(ctx, policy.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := detachv1alpha1.FromUnstructured(got)
		if err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(p.Status.Conditions, detachv1alpha1.ConditionValid)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("conditions %+v", p.Status.Conditions)
	})

	if err := adcProc.stop(20 * time.Second); err != nil {
		t.Errorf("adc after SIGTERM: %v, want exit 0", err)
	}
	if holder := leaseHolder(ctx, cp.Client, leaseNS); holder != "" {
		t.Errorf("Lease still held by %s after SIGTERM, want it released for the standby", holder)
	}
	if out := adcProc.out.String(); strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("the adc binary was refused something as %s:\n%s", m.serviceAccountUser(), out)
	}
	if t.Failed() {
		t.Logf("adc output:\n%s", adcProc.out.String())
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the admin and
// impersonates the ServiceAccount (`as:` in the file), so the adc binary runs with the
// ServiceAccount's permissions only.
func serviceAccountKubeconfig(t *testing.T, admin *rest.Config, user string) string {
	t.Helper()
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := framework.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	// Make sure of the impersonation: without it the binary would run as the admin and the
	// test would prove nothing.
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range kc.AuthInfos {
		auth.Impersonate = user
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// adcProcess is a running `adc` command.
type adcProcess struct {
	cmd  *exec.Cmd
	out  *framework.Output
	done chan struct{} // closed when the process has exited, err is then set
	err  error
}

// startADC runs the adc binary with args, and env added to the test's environment.
func startADC(t *testing.T, args []string, env ...string) *adcProcess {
	t.Helper()
	p := &adcProcess{cmd: exec.Command(adcBinary, args...), out: &framework.Output{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting adc %v: %v", args, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { _ = p.stop(10 * time.Second) })
	return p
}

// stop sends SIGTERM, waits for the exit (killing the process after timeout) and returns
// the exit error; once the process has exited it only returns that error.
func (p *adcProcess) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("no exit within %s of SIGTERM; killed", timeout)
	}
}

func httpGet(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// leaseHolder returns who holds adc's Lease in namespace ns now, "" when nobody does.
func leaseHolder(ctx context.Context, client kubernetes.Interface, ns string) string {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitForNewLeader waits until an adc binary of this host, not previousHolder, holds adc's
// Lease in namespace ns. A replica is ready while it waits for the Lease and turns unready
// for the moment its caches sync once it leads, so a test that reads /readyz to know the
// controller runs waits for the Lease first.
func waitForNewLeader(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, previousHolder string) {
	t.Helper()
	host, _ := os.Hostname()
	var holder string
	framework.Eventually(ctx, t, "the adc binary holds Lease "+ns+"/"+leaseName, 30*time.Second, func(ctx context.Context) (bool, string) {
		holder = leaseHolder(ctx, client, ns)
		return holder != "" && holder != previousHolder && strings.HasPrefix(holder, host+"_"), "holder " + holder
	})
	t.Logf("Lease %s/%s held by %s", ns, leaseName, holder)
}
