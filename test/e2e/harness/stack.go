package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/internal/controlplane"
)

// Timeouts of the stack's own waits.
const (
	registerTimeout = 60 * time.Second
	readyTimeout    = 60 * time.Second
)

// Stack is a running end-to-end stack: control plane, kubelets, drivers, attachers and adc.
type Stack struct {
	// Dir is the stack's temporary folder; Stop removes it.
	Dir string
	// Client is an admin clientset of the control plane.
	Client kubernetes.Interface

	opts       Options
	assets     string
	kubeconfig string
	// adcKubeconfig and adcUser are what adc runs with: the admin's kubeconfig and user,
	// or with Options.ShippedRBAC the ServiceAccount's.
	adcKubeconfig, adcUser string
	cp                     *controlplane.ControlPlane
	stopCP                 func()
	kubelets               map[string]*Kubelet
	drivers                map[string]*Driver
	adc                    *Process
	adcPort                int
	adcSecurePort          int
	// kcm and scheduler run with Options.Cluster.
	kcm, scheduler         *Process
	kcmPort, schedulerPort int

	mu sync.Mutex
	// replicas are the adc replicas of NewADCReplica.
	replicas []*Process
	procs    []*Process
	ports    []int
	envDirs  []string
	before   hostState
	started  time.Time
	stopOnce sync.Once
	stopErr  error
}

// KeepLogsEnv names a folder to which Stop copies every process log and call log of the stack
// (into a subfolder named after the stack's folder), for debugging; unset, nothing is kept.
const KeepLogsEnv = "E2E_KEEP_LOGS"

// copyLogs copies the files of the stack's logs folder and the drivers' call logs.
func copyLogs(from, to string) error {
	if err := os.MkdirAll(to, 0o750); err != nil {
		return fmt.Errorf("harness: keeping logs in %s: %w", to, err)
	}
	files, _ := filepath.Glob(filepath.Join(from, "*"))
	calls, _ := filepath.Glob(filepath.Join(filepath.Dir(from), "d", "*", "calls.jsonl"))
	for _, f := range append(files, calls...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("harness: keeping log %s: %w", f, err)
		}
		name := filepath.Base(f)
		if name == "calls.jsonl" {
			name = "calls-" + filepath.Base(filepath.Dir(f)) + ".jsonl"
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
			return fmt.Errorf("harness: keeping log %s: %w", f, err)
		}
	}
	return nil
}

// quietControllerRuntime silences envtest's "log.SetLogger(...) was never called" warning.
var quietControllerRuntime sync.Once

// Start starts a stack and waits until every started kubelet has registered its node and
// every driver, and adc is ready. On an error it stops what it started.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	assets := AssetsDir()
	if err := checkAssets(assets); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, assets: assets, kubelets: map[string]*Kubelet{}, drivers: map[string]*Driver{}, started: time.Now()}
	s.before = captureHost()
	// A short folder: unix socket paths (kubelet root dir + plugins/<driver>/csi.sock) must
	// stay under 108 bytes.
	if s.Dir, err = os.MkdirTemp("", "adc-e2e-"); err != nil {
		return nil, fmt.Errorf("harness: creating the stack folder: %w", err)
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	for _, d := range []string{"logs", "n", "d"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o750); err != nil {
			return nil, fmt.Errorf("harness: creating %s: %w", d, err)
		}
	}
	quietControllerRuntime.Do(func() { crlog.SetLogger(logr.Discard()) })
	s.logf("starting the control plane")
	cpOpts := controlplane.Options{Restartable: opts.RestartableAPIServer, APIServerFlags: opts.APIServerFlags}
	if opts.ShippedRBAC {
		// Every request: adc's are made by the admin impersonating its ServiceAccount, which
		// the policy cannot select.
		cpOpts.AuditPolicy = auditlog.PolicyAll
	}
	if opts.AuditPolicy != "" {
		cpOpts.AuditPolicy = opts.AuditPolicy
	}
	s.cp, s.stopCP, err = controlplane.StartWithOptions(cpOpts)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	// The stack's own client, with a budget for tests that watch and poll many objects (the
	// control plane's client keeps client-go's default 5 QPS).
	clientCfg := rest.CopyConfig(s.cp.Config)
	clientCfg.QPS, clientCfg.Burst = 200, 400
	if s.Client, err = kubernetes.NewForConfig(clientCfg); err != nil {
		return nil, fmt.Errorf("harness: building the stack's client: %w", err)
	}
	s.trackControlPlane()
	s.kubeconfig = filepath.Join(s.Dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(s.cp.Config, s.kubeconfig); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	s.adcKubeconfig, s.adcUser = s.kubeconfig, ""
	if opts.ShippedRBAC {
		if s.adcKubeconfig, s.adcUser, err = s.applyShippedRBAC(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.createCSIDrivers(ctx); err != nil {
		return nil, err
	}
	if err := s.installCRDs(ctx); err != nil {
		return nil, err
	}
	if err := s.applyRBAC(ctx); err != nil {
		return nil, err
	}
	if opts.Cluster != nil {
		// Before the kubelets, as in a cluster: the node lifecycle controller takes the
		// not-ready taint off each node as it comes up, and the scheduler sees it.
		s.logf("starting kube-controller-manager (--controllers=%s) and kube-scheduler", opts.Cluster.Controllers)
		if err := s.newClusterProcesses(); err != nil {
			return nil, err
		}
		if err := s.startCluster(ctx); err != nil {
			return nil, err
		}
	}

	for _, n := range opts.Nodes {
		root := filepath.Join(s.Dir, "n", n)
		// The harness owns the root dir, so a kubelet restart keeps it (and the sockets in it).
		if err := os.MkdirAll(root, 0o750); err != nil {
			return nil, fmt.Errorf("harness: creating the root dir of node %s: %w", n, err)
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.kubelets[n] = newKubelet(s, n, root, port)
	}
	for _, o := range opts.Drivers {
		d, err := newDriver(s, o)
		if err != nil {
			return nil, err
		}
		s.drivers[o.Name] = d
	}

	s.logf("control plane up after %s; starting %d kubelets", time.Since(s.started).Round(10*time.Millisecond), len(opts.Nodes)-len(opts.DeferredKubelets))
	since := time.Now()
	var started []*Kubelet
	for _, n := range opts.Nodes {
		if contains(opts.DeferredKubelets, n) {
			continue
		}
		if err := s.kubelets[n].Start(); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		started = append(started, s.kubelets[n])
	}
	// The drivers once the kubelets' Nodes exist, as a CSI node plugin (a DaemonSet pod) starts
	// on a registered node: a kubelet that finds a registration socket before its Node exists
	// fails to register the driver and retries with a backoff that grows to two minutes,
	// which many kubelets starting at once on two cores run into.
	if err := s.waitNodes(ctx, started, registerTimeout+time.Duration(len(started))*time.Second); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := s.waitCSINodes(ctx, started, registerTimeout+time.Duration(len(started))*time.Second); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	for _, d := range s.drivers {
		if err := d.proc.Start(); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	for _, d := range s.drivers {
		if err := waitFile(ctx, d.ControllerSocket, d.proc, 30*time.Second); err != nil {
			return nil, fmt.Errorf("harness: driver %s did not start: %w\n%s", d.Name, err, tail(d.proc.Log(), 20))
		}
	}
	for _, d := range s.drivers {
		if d.attacher != nil {
			if err := d.attacher.Start(); err != nil {
				return nil, fmt.Errorf("harness: %w", err)
			}
		}
	}
	// A kubelet takes under a second to register on an idle machine; a hundred starting at once
	// on two cores take longer.
	if err := s.waitRegistered(ctx, started, since, registerTimeout+time.Duration(len(started))*time.Second); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}

	s.logf("kubelets registered after %s", time.Since(s.started).Round(10*time.Millisecond))
	if opts.NoADC {
		s.logf("stack up in %s (folder %s); kube-controller-manager attaches", time.Since(s.started).Round(10*time.Millisecond), s.Dir)
		return s, nil
	}
	if s.adcPort, err = freePort(); err != nil {
		return nil, err
	}
	if s.adcSecurePort, err = freePort(); err != nil {
		return nil, err
	}
	// One replica: a restart in a test must not wait out a lease.
	args := append(s.adcArgs(s.adcPort, s.adcSecurePort), "--leader-elect=false", "--v", "2")
	s.adc = newProcess("adc", opts.ADCBinary, s.logPath("adc"), append(args, opts.ADCArgs...)...)
	s.track(s.adc, s.adcPort, s.adcSecurePort)
	if !opts.DeferADC {
		s.logf("starting adc")
		if err := s.adc.Start(); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		if err := s.WaitADCReady(ctx); err != nil {
			return nil, err
		}
	}
	s.logf("stack up in %s (folder %s)", time.Since(s.started).Round(10*time.Millisecond), s.Dir)
	return s, nil
}

// adcArgs are the flags of an adc controller process serving on loopback ports port (plain
// HTTP) and securePort.
func (s *Stack) adcArgs(port, securePort int) []string {
	return []string{"controller", "--kubeconfig", s.adcKubeconfig,
		// The secure port as the Deployment serves it (TLS, delegated authentication and
		// authorization through the API server, with the shipped RBAC when ShippedRBAC),
		// on loopback; the tests read adc over plain HTTP on loopback.
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(securePort),
		"--http-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
}

// ADCReplica is one more adc controller process beside ADC(), as a second replica of the
// Deployment (or the new version of a rolling upgrade) runs: same binary, kubeconfig, user and
// Options.ADCArgs, ports of its own, and none of the harness's --leader-elect=false.
type ADCReplica struct {
	*Process
	// Addr is its plain HTTP address on loopback (/healthz, /readyz, /metrics).
	Addr string
}

// NewADCReplica prepares an adc replica named name (its log is <name>.log), started with
// Start: the flags ADC() has except --leader-elect=false, then Options.ADCArgs, then args (e.g.
// --leader-elect-namespace). The stack stops it with the rest. It needs Options.ADCBinary.
func (s *Stack) NewADCReplica(name string, args ...string) (*ADCReplica, error) {
	if s.opts.ADCBinary == "" {
		return nil, fmt.Errorf("harness: an adc replica needs Options.ADCBinary")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	securePort, err := freePort()
	if err != nil {
		return nil, err
	}
	all := append(s.adcArgs(port, securePort), "--v", "2")
	all = append(append(all, s.opts.ADCArgs...), args...)
	p := newProcess(name, s.opts.ADCBinary, s.logPath(name), all...)
	s.track(p, port, securePort)
	s.mu.Lock()
	s.replicas = append(s.replicas, p)
	s.mu.Unlock()
	return &ADCReplica{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

// WaitReady waits until the replica's /readyz answers 200 (a standby replica is ready too).
func (r *ADCReplica) WaitReady(ctx context.Context) error {
	return waitADCReady(ctx, r.Process, r.Addr)
}

// createCSIDrivers creates the CSIDriver objects a driver's installation would.
func (s *Stack) createCSIDrivers(ctx context.Context) error {
	for _, o := range s.opts.Drivers {
		if o.NoCSIDriverObject {
			continue
		}
		attach := !o.NoAttach
		obj := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: o.Name}, Spec: storagev1.CSIDriverSpec{AttachRequired: &attach}}
		if _, err := s.Client.StorageV1().CSIDrivers().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("harness: creating CSIDriver %s: %w", o.Name, err)
		}
	}
	return nil
}

// WaitADCReady waits until adc's /readyz answers 200.
func (s *Stack) WaitADCReady(ctx context.Context) error {
	if s.adc == nil {
		return fmt.Errorf("harness: no adc process in this stack (Options.NoADC)")
	}
	return waitADCReady(ctx, s.adc, s.ADCAddr())
}

// waitADCReady waits until the adc process p answers 200 on http://addr/readyz.
func waitADCReady(ctx context.Context, p *Process, addr string) error {
	url := "http://" + addr + "/readyz"
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("%s exited: %v", p.Name, p.ExitError())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("harness: %s not ready (last: %s): %w\n%s", p.Name, last, err, tail(p.Log(), 30))
	}
	return nil
}

// ControlPlane returns the control plane, for its config and RestartAPIServer.
func (s *Stack) ControlPlane() *controlplane.ControlPlane { return s.cp }

// Kubeconfig returns the admin kubeconfig every part of the stack uses.
func (s *Stack) Kubeconfig() string { return s.kubeconfig }

// Nodes returns the node names, in Options order.
func (s *Stack) Nodes() []string { return append([]string(nil), s.opts.Nodes...) }

// Kubelet returns the kubelet of node, nil for an unknown node.
func (s *Stack) Kubelet(node string) *Kubelet { return s.kubelets[node] }

// Driver returns the driver named name, nil for an unknown one.
func (s *Stack) Driver(name string) *Driver { return s.drivers[name] }

// Drivers returns every driver, in Options order.
func (s *Stack) Drivers() []*Driver {
	out := make([]*Driver, 0, len(s.opts.Drivers))
	for _, o := range s.opts.Drivers {
		out = append(out, s.drivers[o.Name])
	}
	return out
}

// ADCUser returns the user adc runs as with Options.ShippedRBAC (its ServiceAccount's),
// empty when it runs as the admin.
func (s *Stack) ADCUser() string { return s.adcUser }

// ADC returns the adc controller process, nil with Options.NoADC.
func (s *Stack) ADC() *Process { return s.adc }

// ADCAddr returns adc's plain HTTP address on loopback (/healthz, /readyz, /metrics, the
// dashboard).
func (s *Stack) ADCAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.adcPort)) }

// Logs returns the last lines of every process's log, for a failed test's output.
func (s *Stack) Logs(lines int) string {
	s.mu.Lock()
	procs := append([]*Process(nil), s.procs...)
	s.mu.Unlock()
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "----- %s (last %d lines) -----\n%s\n", p.Name, lines, tail(p.Log(), lines))
	}
	return b.String()
}

// Stop stops every process (adc, kube-controller-manager and kube-scheduler, attachers,
// kubelets, drivers, then the control plane) and removes the stack's folder. It is safe to
// call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		start := time.Now()
		var errs []error
		stopAll := func(ps []*Process) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, p := range ps {
				if p == nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := p.Stop(); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		s.mu.Lock()
		first := append([]*Process{s.adc, s.kcm, s.scheduler}, s.replicas...)
		s.mu.Unlock()
		stopAll(first)
		var attachers, kubelets, drivers []*Process
		for _, d := range s.drivers {
			attachers = append(attachers, d.attacher)
			drivers = append(drivers, d.proc)
		}
		for _, k := range s.kubelets {
			kubelets = append(kubelets, k.proc)
		}
		stopAll(attachers)
		stopAll(kubelets)
		stopAll(drivers)
		if s.stopCP != nil {
			s.stopCP()
		}
		if keep := os.Getenv(KeepLogsEnv); keep != "" && s.Dir != "" {
			if err := copyLogs(filepath.Join(s.Dir, "logs"), filepath.Join(keep, filepath.Base(s.Dir))); err != nil {
				errs = append(errs, err)
			}
		}
		if s.Dir != "" {
			if err := os.RemoveAll(s.Dir); err != nil {
				errs = append(errs, fmt.Errorf("harness: removing %s: %w", s.Dir, err))
			}
		}
		s.stopErr = errors.Join(errs...)
		s.logf("stack stopped in %s", time.Since(start).Round(10*time.Millisecond))
	})
	return s.stopErr
}

func (s *Stack) track(p *Process, ports ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
	s.ports = append(s.ports, ports...)
}

// trackControlPlane remembers the control plane's ports and folders for the leftovers check.
func (s *Stack) trackControlPlane() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if api := s.cp.Env.ControlPlane.APIServer; api != nil {
		if api.SecureServing.Port != "" {
			if p, err := strconv.Atoi(api.SecureServing.Port); err == nil {
				s.ports = append(s.ports, p)
			}
		}
		if api.CertDir != "" {
			s.envDirs = append(s.envDirs, api.CertDir)
		}
	}
	if etcd := s.cp.Env.ControlPlane.Etcd; etcd != nil {
		if etcd.URL != nil {
			if p, err := strconv.Atoi(etcd.URL.Port()); err == nil {
				s.ports = append(s.ports, p)
			}
		}
		if etcd.DataDir != "" {
			s.envDirs = append(s.envDirs, etcd.DataDir)
		}
	}
}

func (s *Stack) bin(name string) string { return filepath.Join(s.assets, name) }

func (s *Stack) logPath(name string) string {
	return filepath.Join(s.Dir, "logs", strings.ReplaceAll(name, "/", "_")+".log")
}

func (s *Stack) logf(format string, args ...any) {
	fmt.Fprintf(s.opts.Log, "harness: "+format+"\n", args...)
}

// waitFile waits until path exists, or fails early when p exits.
func waitFile(ctx context.Context, path string, p *Process, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if _, err := os.Stat(path); err == nil {
			return true, nil
		}
		if !p.Running() {
			return false, fmt.Errorf("%s exited before creating %s: %v", p.Name, path, p.ExitError())
		}
		return false, nil
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
