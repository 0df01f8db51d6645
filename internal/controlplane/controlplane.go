// Package controlplane starts a local kube-apiserver + etcd from the binaries `make
// envtest-assets` builds from Go modules, through controller-runtime's envtest. The
// integration tests and `adc demo` share it.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
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
func Start() (*ControlPlane, func(), error) {
	dir := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, nil, fmt.Errorf("control plane binary %s not found in %s: run `make envtest-assets` (or set KUBEBUILDER_ASSETS): %w", bin, dir, err)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting the control plane from %s: %w", dir, err)
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
	return &ControlPlane{Config: cfg, Client: client, Dynamic: dyn, KubeconfigPath: kubeconfig, Env: env}, stop, nil
}

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
