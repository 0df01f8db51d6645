// Package controlplane starts a local kube-apiserver + etcd from the binaries `make
// envtest-assets` builds from Go modules, through controller-runtime's envtest. The
// integration tests and `adc-demo` share it.
package controlplane

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/migration-aware/adc/internal/auditlog"
)

// KubernetesVersion is the version of the control plane `make envtest-assets` builds.
const KubernetesVersion = "1.36.3"

// ControlPlane is a running local control plane and the ways to talk to it as an admin.
type ControlPlane struct {
	// Config is an admin rest.Config; copy it before changing QPS or user.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// Dynamic is an admin dynamic client, for CRDs such as the seed-API CSINodeInfo.
	Dynamic dynamic.Interface
	// KubeconfigPath is a kubeconfig file for the admin user, for commands.
	KubeconfigPath string
	// Env is the underlying envtest environment, for adding users.
	Env *envtest.Environment
	// AuditLogPath is the kube-apiserver's audit log (JSON lines, see internal/auditlog),
	// when it was started with Options.AuditPolicy; empty otherwise. It is removed on stop.
	AuditLogPath string

	restartable bool
	// stopped is closed when the control plane stops.
	stopped chan struct{}

	mu       sync.Mutex
	notReady []Window
}

// Window is a span of time; To is zero while it lasts.
type Window struct{ From, To time.Time }

// Contains reports whether t is in the window (at or after From, before To or To unset).
func (w Window) Contains(t time.Time) bool {
	return !t.Before(w.From) && (w.To.IsZero() || t.Before(w.To))
}

// AssetsDir returns where the control plane binaries are: KUBEBUILDER_ASSETS when set,
// else bin/envtest/<version> in the working directory when it exists there, else in the
// source tree this was built from.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	rel := filepath.Join("bin", "envtest", KubernetesVersion)
	if _, err := os.Stat(filepath.Join(rel, "kube-apiserver")); err == nil {
		abs, _ := filepath.Abs(rel)
		return abs
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// Start starts a control plane. The returned stop function stops it and removes everything
// it created.
func Start() (*ControlPlane, func(), error) { return StartWithOptions(Options{}) }

// restartStopTimeout bounds a graceful stop of a restartable control plane's processes.
const restartStopTimeout = 3 * time.Second

// startTimeout is how long each control plane process may take to get healthy.
const startTimeout = time.Minute

// envtestDirs returns the folders envtest made for the control plane (the kube-apiserver's
// certificates unless ownCertDir, etcd's data unless ownDataDir), for removal after Stop.
func envtestDirs(env *envtest.Environment, ownCertDir, ownDataDir string) []string {
	var dirs []string
	if api := env.ControlPlane.APIServer; api != nil && ownCertDir == "" && api.CertDir != "" {
		dirs = append(dirs, api.CertDir)
	}
	if etcd := env.ControlPlane.Etcd; etcd != nil && ownDataDir == "" && etcd.DataDir != "" {
		dirs = append(dirs, etcd.DataDir)
	}
	return dirs
}

// Options change how StartWithOptions starts a control plane; the zero value is Start.
type Options struct {
	// Restartable keeps the kube-apiserver's serving certificates, client CA and port in a
	// folder of their own, so that RestartAPIServer can stop and start it again while every
	// rest.Config and kubeconfig handed out stays valid (fault-injection tests need this).
	Restartable bool
	// EtcdDataDir, when set, is etcd's data folder: it may hold a cluster saved by an earlier
	// control plane (benchmarks seed once and start each run from a copy), and it is left in
	// place on stop. Empty: a fresh temporary folder, removed on stop.
	EtcdDataDir string
	// APIServerFlags are extra kube-apiserver flags, name without "--" to value (benchmarks
	// turn on the audit log with them).
	APIServerFlags map[string]string
	// AuditPolicy, when set, is an audit policy (YAML, e.g. auditlog.PolicyAll): the
	// kube-apiserver logs the requests it selects to ControlPlane.AuditLogPath.
	AuditPolicy string
}

// StartWithOptions starts a control plane as Start does, changed by opts.
func StartWithOptions(opts Options) (*ControlPlane, func(), error) {
	dir := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, nil, fmt.Errorf("control plane binary %s not found in %s: run `make envtest-assets` (or set KUBEBUILDER_ASSETS): %w", bin, dir, err)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	if opts.EtcdDataDir != "" {
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: opts.EtcdDataDir}
	}
	flags := maps.Clone(opts.APIServerFlags)
	var auditDir, auditLog string
	if opts.AuditPolicy != "" {
		var err error
		if auditDir, err = os.MkdirTemp("", "adc-apiserver-audit-"); err != nil {
			return nil, nil, fmt.Errorf("creating a folder for the audit log: %w", err)
		}
		policy := filepath.Join(auditDir, "policy.yaml")
		if err := os.WriteFile(policy, []byte(opts.AuditPolicy), 0o600); err != nil {
			_ = os.RemoveAll(auditDir)
			return nil, nil, fmt.Errorf("writing the audit policy: %w", err)
		}
		auditLog = filepath.Join(auditDir, "audit.log")
		if flags == nil {
			flags = map[string]string{}
		}
		maps.Copy(flags, auditlog.APIServerFlags(policy, auditLog))
	}
	if len(flags) > 0 {
		env.ControlPlane.APIServer = &envtest.APIServer{}
		for name, value := range flags {
			env.ControlPlane.APIServer.Configure().Set(name, value)
		}
	}
	var certDir string
	if opts.Restartable {
		var err error
		if certDir, err = os.MkdirTemp("", "adc-apiserver-certs-"); err != nil {
			return nil, nil, fmt.Errorf("creating a folder for the kube-apiserver certificates: %w", err)
		}
		// A fixed CertDir is not removed by Stop, so a restart reuses the serving
		// certificates; the client CA lives in the APIServer's authenticator and the port in
		// its SecureServing, both kept across Stop and Start.
		if env.ControlPlane.APIServer == nil {
			env.ControlPlane.APIServer = &envtest.APIServer{}
		}
		env.ControlPlane.APIServer.CertDir = certDir
		// kube-apiserver's graceful shutdown can outlast envtest's default 20 s with watches
		// open; after this long it is killed, which is a fair kind of restart too.
		env.ControlPlaneStopTimeout = restartStopTimeout
	}
	// envtest gives each process 20 s to get healthy, then starts the whole control plane
	// again; on a busy machine that costs more than waiting (and see envDirs below).
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = startTimeout
	}
	cfg, err := env.Start()
	if err != nil && env.Config != nil && strings.Contains(err.Error(), "default namespace didn't register") {
		// envtest waits 5 s for the default namespace, which a busy machine's API server may
		// not create in time; what Start would do after it (install CRDs and webhooks) is
		// nothing here. Wait as long as a process may take to get healthy instead.
		if werr := waitDefaultNamespace(env.Config, startTimeout); werr == nil {
			cfg, err = env.Config, nil
		}
	}
	if err != nil {
		// envtest's Start returns after etcd and kube-apiserver run when a later step fails:
		// stop them, or they outlive the test.
		_ = env.Stop()
		for _, d := range []string{certDir, auditDir} {
			if d != "" {
				_ = os.RemoveAll(d)
			}
		}
		return nil, nil, fmt.Errorf("starting the control plane from %s: %w", dir, err)
	}
	// When envtest retried a start, the retry reuses the folders it made for the first try
	// and no longer counts them as its own, so its Stop leaves them in the temp folder.
	envDirs := envtestDirs(env, certDir, opts.EtcdDataDir)
	cleanup := []func(){func() {
		_ = env.Stop()
		for _, d := range envDirs {
			_ = os.RemoveAll(d)
		}
	}}
	// Removed after the stop (cleanups run last to first).
	for _, d := range []string{certDir, auditDir} {
		if d != "" {
			cleanup = append([]func(){func() { _ = os.RemoveAll(d) }}, cleanup...)
		}
	}
	stopped := make(chan struct{})
	cleanup = append([]func(){func() { close(stopped) }}, cleanup...)
	stop := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("building a clientset for the control plane: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("building a dynamic client for the control plane: %w", err)
	}
	tmp, err := os.MkdirTemp("", "adc-controlplane-")
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("creating a folder for the kubeconfig: %w", err)
	}
	cleanup = append(cleanup, func() { _ = os.RemoveAll(tmp) })
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := WriteKubeconfig(cfg, kubeconfig); err != nil {
		stop()
		return nil, nil, err
	}
	return &ControlPlane{Config: cfg, Client: client, Dynamic: dyn, KubeconfigPath: kubeconfig, Env: env, AuditLogPath: auditLog,
		restartable: opts.Restartable, stopped: stopped}, stop, nil
}

// RestartAPIServer stops the kube-apiserver, runs whileDown (for example to compact etcd, so
// that every watch must relist after the restart) and starts it again on the same port with
// the same certificates. It needs a control plane started with Options.Restartable.
func (cp *ControlPlane) RestartAPIServer(whileDown func() error) error {
	if !cp.restartable {
		return fmt.Errorf("restarting the kube-apiserver: the control plane was not started with Options.Restartable")
	}
	api := cp.Env.ControlPlane.GetAPIServer()
	cp.mu.Lock()
	cp.notReady = append(cp.notReady, Window{From: time.Now()})
	window := len(cp.notReady) - 1
	cp.mu.Unlock()
	// Stop sends SIGTERM and, after the stop timeout, SIGKILL with an error; either way the
	// process is going, and the restart waits for its port instead.
	_ = api.Stop()
	addr := net.JoinHostPort(api.SecureServing.Address, api.SecureServing.Port)
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true, nil
		}
		_ = conn.Close()
		return false, nil
	}); err != nil {
		return fmt.Errorf("waiting for the stopped kube-apiserver to free %s: %w", addr, err)
	}
	var downErr error
	if whileDown != nil {
		downErr = whileDown()
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting the kube-apiserver again: %w", err)
	}
	// Start returns once /healthz passes; the server is ready later (NotReady).
	go cp.closeWhenReady(window)
	if downErr != nil {
		return fmt.Errorf("while the kube-apiserver was down: %w", downErr)
	}
	return nil
}

// NotReady returns when the kube-apiserver was stopped or not yet ready again: from each
// RestartAPIServer's stop until /readyz first answered ok after it (To unset while it has
// not). A restarted kube-apiserver serves from when /healthz passes, and until it is ready
// its RBAC authorizer may refuse (403) what RBAC grants, its caches not yet synced
// (kubernetes#121635), so an audit check leaves out the 403s received then.
func (cp *ControlPlane) NotReady() []Window {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return slices.Clone(cp.notReady)
}

// closeWhenReady ends the not-ready window once /readyz answers ok (polled for up to two
// minutes, or until the control plane stops).
func (cp *ControlPlane) closeWhenReady(window int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-cp.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return false, nil
		}
		cp.mu.Lock()
		cp.notReady[window].To = time.Now()
		cp.mu.Unlock()
		return true, nil
	})
}

// EtcdURL returns the client URL of the control plane's etcd, for tests that read or compact
// the storage directly.
func (cp *ControlPlane) EtcdURL() string { return cp.Env.ControlPlane.Etcd.URL.String() }

// WriteKubeconfig writes cfg as a kubeconfig file, so commands can be pointed at it.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// waitDefaultNamespace waits until the API server serves the default namespace.
func waitDefaultNamespace(cfg *rest.Config, timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}
