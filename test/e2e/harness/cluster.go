package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ClusterOptions run what envtest lacks and a cluster has, so that tests stage none of it:
// kube-scheduler, and kube-controller-manager with its controllers (the PV binder, node
// lifecycle, pod garbage collector, StatefulSet, service account and token controllers, and,
// depending on Controllers, an attach/detach controller). Package test/e2e/cluster chooses
// the binaries and flags of its three modes; the harness starts, watches and stops them.
type ClusterOptions struct {
	// ControllerManager is the kube-controller-manager binary (stock, or with adc inside).
	ControllerManager string
	// Controllers is its --controllers, e.g. "*" or "*,-persistentvolume-attach-detach-controller".
	Controllers string
	// ControllerManagerArgs are added after the harness's flags (so they win), e.g.
	// --node-monitor-grace-period or adc's --adc-* flags.
	ControllerManagerArgs []string
	// Scheduler is the kube-scheduler binary.
	Scheduler string
	// SchedulerArgs are added after the harness's flags.
	SchedulerArgs []string
}

// clusterStartTimeout bounds the wait for kube-controller-manager's and kube-scheduler's
// /healthz after their start.
const clusterStartTimeout = 60 * time.Second

// ControllerManager returns the kube-controller-manager process, nil without Options.Cluster.
func (s *Stack) ControllerManager() *Process { return s.kcm }

// Scheduler returns the kube-scheduler process, nil without Options.Cluster.
func (s *Stack) Scheduler() *Process { return s.scheduler }

// RestartControllerManager stops kube-controller-manager (SIGTERM), starts it again with
// --controllers controllers (the other flags unchanged), as an operator's edit of its static
// Pod manifest does, and waits for its /healthz.
func (s *Stack) RestartControllerManager(ctx context.Context, controllers string) error {
	if s.kcm == nil {
		return fmt.Errorf("harness: no kube-controller-manager in this stack (Options.Cluster)")
	}
	if err := s.kcm.Stop(); err != nil {
		return fmt.Errorf("harness: stopping kube-controller-manager: %w", err)
	}
	s.SetControllers(controllers)
	if err := s.kcm.Start(); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return s.waitHealthy(ctx, s.kcm, s.kcmPort)
}

// SetControllers sets kube-controller-manager's --controllers for its next Start.
func (s *Stack) SetControllers(controllers string) {
	args := s.kcm.Args()
	for i := range args {
		if args[i] == "--controllers" && i+1 < len(args) {
			args[i+1] = controllers
		}
	}
	s.kcm.SetArgs(args...)
}

// WaitControllerManagerHealthy waits for kube-controller-manager's /healthz (after a Start).
func (s *Stack) WaitControllerManagerHealthy(ctx context.Context) error {
	return s.waitHealthy(ctx, s.kcm, s.kcmPort)
}

// newClusterProcesses prepares kube-controller-manager and kube-scheduler: their flags, ports
// and folders (all inside the stack's folder, none on the host's defaults such as
// /var/run/kubernetes or /usr/libexec/kubernetes).
func (s *Stack) newClusterProcesses() error {
	c := s.opts.Cluster
	dir := filepath.Join(s.Dir, "cp")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("harness: creating %s: %w", dir, err)
	}
	// The cluster CA, for the root-ca-cert-publisher (ConfigMap kube-root-ca.crt in every
	// namespace, which the service account token volume of every pod projects).
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, s.cp.Config.CAData, 0o644); err != nil {
		return fmt.Errorf("harness: writing the cluster CA: %w", err)
	}
	api := s.cp.Env.ControlPlane.GetAPIServer()
	// envtest's kube-apiserver signs service account tokens with this key; the tokens
	// controller signs the legacy token Secrets with it too.
	saKey := filepath.Join(api.CertDir, "sa-signer.key")
	if _, err := os.Stat(saKey); err != nil {
		return fmt.Errorf("harness: the kube-apiserver's service account signing key: %w", err)
	}
	var err error
	if s.kcmPort, err = freePort(); err != nil {
		return err
	}
	kcmArgs := []string{
		"--kubeconfig", s.kubeconfig,
		"--authentication-kubeconfig", s.kubeconfig, "--authorization-kubeconfig", s.kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(s.kcmPort),
		"--cert-dir", filepath.Join(dir, "kcm-certs"),
		"--controllers", c.Controllers,
		// Each controller with its own ServiceAccount under its bootstrap ClusterRole, as
		// kubeadm runs it.
		"--use-service-account-credentials",
		"--service-account-private-key-file", saKey,
		"--root-ca-file", caFile,
		// One instance: a restart must not wait out a lease.
		"--leader-elect=false",
		// FlexVolume's prober creates this folder; keep it off the host's /usr/libexec.
		"--flex-volume-plugin-dir", filepath.Join(dir, "flexvolume"),
		"-v", "2",
	}
	s.kcm = newProcess("kube-controller-manager", c.ControllerManager, s.logPath("kube-controller-manager"), append(kcmArgs, c.ControllerManagerArgs...)...)
	s.kcm.anyExitOnSIGTERM = true
	s.track(s.kcm, s.kcmPort)

	if s.schedulerPort, err = freePort(); err != nil {
		return err
	}
	schedArgs := []string{
		"--kubeconfig", s.kubeconfig,
		"--authentication-kubeconfig", s.kubeconfig, "--authorization-kubeconfig", s.kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(s.schedulerPort),
		"--cert-dir", filepath.Join(dir, "scheduler-certs"),
		"--leader-elect=false",
		"-v", "2",
	}
	s.scheduler = newProcess("kube-scheduler", c.Scheduler, s.logPath("kube-scheduler"), append(schedArgs, c.SchedulerArgs...)...)
	s.scheduler.anyExitOnSIGTERM = true
	s.track(s.scheduler, s.schedulerPort)
	return nil
}

// startCluster starts kube-controller-manager and kube-scheduler and waits for their /healthz.
func (s *Stack) startCluster(ctx context.Context) error {
	for _, p := range []*Process{s.kcm, s.scheduler} {
		if err := p.Start(); err != nil {
			return fmt.Errorf("harness: %w", err)
		}
	}
	if err := s.waitHealthy(ctx, s.kcm, s.kcmPort); err != nil {
		return err
	}
	return s.waitHealthy(ctx, s.scheduler, s.schedulerPort)
}

// waitHealthy waits until p answers 200 on https://127.0.0.1:port/healthz (a path both
// components let anyone read).
func (s *Stack) waitHealthy(ctx context.Context, p *Process, port int) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		// Both serve a self-signed certificate of their own, made in --cert-dir.
		InsecureSkipVerify: true, //nolint:gosec // a test talking to its own child process
	}}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, clusterStartTimeout, true, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("%s exited: %v", p.Name, p.ExitError())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("harness: %s not healthy (last: %s): %w\n%s", p.Name, last, err, tail(p.Log(), 30))
	}
	return nil
}
