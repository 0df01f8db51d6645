package kcm

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/test/integration/framework"
)

// Controllers is the operator's switch: every default controller, adc on, the built-in
// attach/detach controller off.
const controllers = "*," + adc.ControllerManagerName + ",-persistentvolume-attach-detach-controller"

// adcHealthy is how kube-controller-manager's /healthz?verbose lists a passing adc check.
const adcHealthy = "[+]" + adc.ControllerManagerName + " ok"

// instance is one kube-controller-manager-adc process.
type instance struct {
	name   string
	cmd    *exec.Cmd
	out    *framework.Output
	port   int
	dir    string // --flex-volume-plugin-dir and --cert-dir live here
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	client *http.Client
}

// options of one instance; zero values are the operator's defaults.
type options struct {
	// controllers is --controllers (default: the const controllers).
	controllers string
	// lease is --leader-elect-resource-name: instances with the same lease elect one leader.
	lease string
	// extra flags, e.g. adc's --adc-*.
	extra []string
}

// start starts kube-controller-manager-adc against the test control plane. The caller stops
// it (stop or kill); startT does that at the end of the test.
func start(cp *framework.ControlPlane, name string, o options) (*instance, error) {
	if o.controllers == "" {
		o.controllers = controllers
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "adc-kcm-")
	if err != nil {
		return nil, fmt.Errorf("creating a folder for kube-controller-manager %s: %w", name, err)
	}
	cert, err := tls.X509KeyPair(cp.Config.CertData, cp.Config.KeyData)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("reading the admin client certificate: %w", err)
	}
	i := &instance{name: name, out: &framework.Output{}, port: port, dir: dir, exited: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			// kube-controller-manager serves a self-signed certificate of its own.
			InsecureSkipVerify: true, //nolint:gosec // a test talking to its own child process
		}}}}
	kubeconfig, err := kcmKubeconfig(cp, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{
		// As a cluster runs it: its own identity, system:kube-controller-manager, under the
		// bootstrap policy's roles; the controllers (adc among them) as their ServiceAccounts.
		"--kubeconfig", kubeconfig,
		// /metrics is authorized through the API server; the test reads it as the admin
		// (system:masters), which may.
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port), "--cert-dir", filepath.Join(dir, "certs"),
		"--controllers", o.controllers,
		"--use-service-account-credentials",
		"--leader-elect", "--leader-elect-resource-name", o.lease,
		// Short terms so that a failover takes seconds (defaults: 15 s, 10 s, 2 s).
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		// FlexVolume's prober creates this folder; keep it off the host's /usr/libexec.
		"--flex-volume-plugin-dir", filepath.Join(dir, "flexvolume"),
		"-v", "2",
	}
	i.cmd = exec.Command(binary, append(args, o.extra...)...)
	i.cmd.Stdout, i.cmd.Stderr = i.out, i.out
	if err := i.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting kube-controller-manager %s: %w", name, err)
	}
	go func() {
		i.err = i.cmd.Wait()
		close(i.exited)
	}()
	return i, nil
}

// startT starts an instance that ends with the test; its output is logged if the test fails.
func startT(t *testing.T, name string, o options) *instance {
	t.Helper()
	i, err := start(framework.Get(t), name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		i.stop()
		if t.Failed() {
			t.Logf("kube-controller-manager %s output (last 150 lines):\n%s", name, i.tail(150))
		}
	})
	return i
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and removes its folder.
func (i *instance) stop() {
	if !i.hasExited() {
		_ = i.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-i.exited:
		case <-time.After(10 * time.Second):
			_ = i.cmd.Process.Kill()
			<-i.exited
		}
	}
	_ = os.RemoveAll(i.dir)
}

// kill ends the process at once, without releasing its leader election lease.
func (i *instance) kill() {
	_ = i.cmd.Process.Kill()
	<-i.exited
}

func (i *instance) hasExited() bool {
	select {
	case <-i.exited:
		return true
	default:
		return false
	}
}

// get returns the status code and body of GET path on the instance's secure port, as the
// test control plane's admin.
func (i *instance) get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", i.port, path), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := i.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// runsADC reports whether the instance leads and its adc is healthy: kube-controller-manager
// builds its controllers, and adds their checks to /healthz, only once it is the leader.
func (i *instance) runsADC(ctx context.Context) (bool, string) {
	if i.hasExited() {
		return false, fmt.Sprintf("kube-controller-manager %s exited: %v", i.name, i.err)
	}
	_, body, err := i.get(ctx, "/healthz?verbose")
	if err != nil {
		return false, err.Error()
	}
	return strings.Contains(body, adcHealthy), body
}

// tail returns the last n lines of the instance's output.
func (i *instance) tail(n int) string {
	lines := strings.Split(strings.TrimRight(i.out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// operator is the kube-controller-manager most tests share, started by the first test that
// needs it: a start-up and a leader election cost seconds, and the tests use objects of
// their own. TestMain stops it; so does a test that needs the cluster to itself.
var operator struct {
	sync.Mutex
	inst *instance
}

// operatorKCM returns the shared instance once its adc is healthy, starting it if needed.
// It runs with one of adc's flags set, which TestHealthzAndMetrics finds in adc's metrics.
func operatorKCM(t *testing.T) *instance {
	t.Helper()
	operator.Lock()
	defer operator.Unlock()
	if operator.inst == nil || operator.inst.hasExited() {
		if operator.inst != nil {
			operator.inst.stop()
		}
		i, err := start(framework.Get(t), "operator", options{lease: "kcm-adc-operator", extra: []string{"--adc-migration", portworxComplete}})
		if err != nil {
			t.Fatal(err)
		}
		operator.inst = i
	}
	i := operator.inst
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-controller-manager %s output (last 150 lines):\n%s", i.name, i.tail(150))
		}
	})
	framework.Eventually(t.Context(), t, "kube-controller-manager "+i.name+" leading, adc healthy", 60*time.Second, i.runsADC)
	return i
}

// portworxComplete is the --adc-migration value of the shared instance.
const portworxComplete = "kubernetes.io/portworx-volume=complete"

// stopOperatorKCM stops the shared instance, if any.
func stopOperatorKCM() {
	operator.Lock()
	defer operator.Unlock()
	if operator.inst != nil {
		operator.inst.stop()
		operator.inst = nil
	}
}

// kcmUser is the identity kube-controller-manager runs as in a cluster; the bootstrap policy
// binds it the ClusterRole system:kube-controller-manager (list and watch of everything for
// its shared informers, tokens of the controllers' ServiceAccounts, delegated authn/z).
const kcmUser = "system:kube-controller-manager"

// kcmKubeconfig writes, into dir, a kubeconfig for kube-controller-manager's own identity: a
// client certificate of the test control plane's CA for kcmUser.
func kcmKubeconfig(cp *framework.ControlPlane, dir string) (string, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: kcmUser}, nil)
	if err != nil {
		return "", fmt.Errorf("creating a client certificate for %s: %w", kcmUser, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing a kubeconfig for %s: %w", kcmUser, err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", kcmUser, err)
	}
	return path, nil
}
