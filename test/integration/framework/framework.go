// Package framework starts one real test control plane (kube-apiserver + etcd, through
// controller-runtime's envtest) per integration test package and hands tests its clients.
//
// Each integration test package calls Main from its TestMain. The control plane binaries are
// built from Go modules by `make envtest-assets`; KUBEBUILDER_ASSETS, when set, points
// elsewhere.
package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubernetesVersion is the version of the control plane `make envtest-assets` builds.
const KubernetesVersion = "1.36.3"

// ControlPlane is a running test control plane and the ways to talk to it as an admin.
type ControlPlane struct {
	// Config is an admin rest.Config; copy it before changing QPS or user.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// Dynamic is an admin dynamic client, for CRDs such as the seed-API CSINodeInfo.
	Dynamic dynamic.Interface
	// KubeconfigPath is a kubeconfig file for the admin user, for commands under test.
	KubeconfigPath string
	// Env is the underlying envtest environment, for adding users.
	Env *envtest.Environment
}

var current *ControlPlane

// Get returns the package's control plane. It fails the test when Main did not start one.
func Get(t testing.TB) *ControlPlane {
	t.Helper()
	if current == nil {
		t.Fatal("framework: no control plane; call framework.Main(m) from the package's TestMain")
	}
	return current
}

// AssetsDir returns where the control plane binaries are: KUBEBUILDER_ASSETS when set,
// otherwise bin/envtest/<version> at the repository root.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	return filepath.Join(root, "bin", "envtest", KubernetesVersion)
}

// Main starts the control plane, runs the package's tests and stops the control plane,
// also when a test panics. It exits the process with the tests' exit code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for a TestMain with its own setup and teardown.
func Run(m *testing.M) (code int) {
	cp, stop, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		return 1
	}
	current = cp
	defer func() {
		if r := recover(); r != nil {
			stop()
			panic(r)
		}
		stop()
	}()
	return m.Run()
}

// Start starts a control plane outside of TestMain, for commands such as `adc demo`. The
// returned stop function removes everything it created.
func Start() (*ControlPlane, func(), error) {
	dir := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, nil, fmt.Errorf("control plane binary %s not found in %s: run `make envtest-assets` (or set KUBEBUILDER_ASSETS): %w", bin, dir, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting the test control plane from %s: %w", dir, err)
	}
	cleanup := []func(){func() { _ = env.Stop() }}
	stop := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("building a clientset for the test control plane: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("building a dynamic client for the test control plane: %w", err)
	}
	tmp, err := os.MkdirTemp("", "adc-envtest-")
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
	return &ControlPlane{Config: cfg, Client: client, Dynamic: dyn, KubeconfigPath: kubeconfig, Env: env}, stop, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file, so commands can be pointed at it.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
