// Package framework starts one real test control plane (kube-apiserver + etcd, through
// controller-runtime's envtest) per integration test package and hands tests its clients.
//
// Each integration test package calls Main (or Run) from its TestMain. The control plane
// binaries are built from Go modules by `make envtest-assets`; KUBEBUILDER_ASSETS, when set,
// points elsewhere.
//
// Suites that run adc under the RBAC it ships with (or the RBAC a host gives it) start the
// control plane with AuditPolicy (RunWithOptions) and check, after their tests, that the API
// server refused adc nothing (CheckNoForbidden) and what it asked for (CallsOf, RuleAllows).
package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/internal/controlplane"
)

// KubernetesVersion is the version of the control plane `make envtest-assets` builds.
const KubernetesVersion = controlplane.KubernetesVersion

// ControlPlane is a running test control plane and the ways to talk to it as an admin.
type ControlPlane = controlplane.ControlPlane

var current *ControlPlane

// Get returns the package's control plane. It fails the test when Main did not start one.
func Get(t testing.TB) *ControlPlane {
	t.Helper()
	if current == nil {
		t.Fatal("framework: no control plane; call framework.Main(m) from the package's TestMain")
	}
	return current
}

// AssetsDir returns where the control plane binaries are.
func AssetsDir() string { return controlplane.AssetsDir() }

// Main starts the control plane, runs the package's tests and stops the control plane,
// also when a test panics. It exits the process with the tests' exit code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for a TestMain with its own setup and teardown.
func Run(m *testing.M) (code int) { return RunWithOptions(m, Options{}) }

// Options change how RunWithOptions runs a package; the zero value is Run.
type Options struct {
	// ControlPlane are the options the package's control plane starts with, e.g. an
	// AuditPolicy for suites that check requests from the audit log.
	ControlPlane controlplane.Options
	// AfterTests, when set, runs once the tests have run, while the control plane still
	// runs, for checks over the whole package (what the audit log shows). passed says
	// whether every test passed. An error it returns is printed and fails the package.
	AfterTests func(cp *ControlPlane, passed bool) error
}

// RunWithOptions is Run with options.
func RunWithOptions(m *testing.M, o Options) (code int) {
	cp, stop, err := controlplane.StartWithOptions(o.ControlPlane)
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
	code = m.Run()
	if o.AfterTests != nil {
		if err := o.AfterTests(cp, code == 0); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL after the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// Start starts a control plane outside of TestMain, for benchmarks.
func Start() (*ControlPlane, func(), error) { return controlplane.Start() }

// WriteKubeconfig writes cfg (including any impersonation) as a kubeconfig file.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	return controlplane.WriteKubeconfig(cfg, path)
}

// MainWithADC is Main for packages that run the adc binary: it builds cmd/adc once into a
// temporary folder, hands its path to setPath, runs the tests on a control plane and removes
// the binary.
func MainWithADC(m *testing.M, setPath func(string)) { MainWithADCOptions(m, setPath, Options{}) }

// MainWithADCOptions is MainWithADC with options (RunWithOptions).
func MainWithADCOptions(m *testing.M, setPath func(string), o Options) {
	bin, cleanup, err := BuildADC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "framework:", err)
		os.Exit(1)
	}
	setPath(bin)
	code := RunWithOptions(m, o)
	cleanup()
	os.Exit(code)
}

// BuildADC builds cmd/adc into a temporary folder and returns its path and a function that
// removes it, for packages that run the binary as users do.
func BuildADC() (string, func(), error) { return BuildCommand("adc") }

// BuildCommand builds cmd/<name> of this module into a temporary folder and returns its path
// and a function that removes it, with the build tags of `make build` (ADC_BUILD_TAGS).
func BuildCommand(name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", name+"-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("creating a folder for the %s binary: %w", name, err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", bin, "github.com/migration-aware/adc/cmd/"+name)
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building %s: %w\n%s", name, err, out)
	}
	return bin, cleanup, nil
}
