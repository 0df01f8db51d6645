// Package kcm runs kube-controller-manager v1.36.3 with adc inside (`make kcm-adc`,
// bin/kcm-adc/kube-controller-manager-adc) against the test control plane, as an operator
// would: adc switched on and the built-in attach/detach controller off through --controllers,
// every other controller running, leader election on, clients per controller from
// ServiceAccounts (--use-service-account-credentials). adc's client is the built-in attach/detach
// controller's ServiceAccount under the bootstrap ClusterRole
// system:controller:attachdetach-controller; after the tests checkAudit fails on any request
// of it the API server refused (403), from the control plane's audit log.
package kcm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/integration/framework"
)

// binary is the kube-controller-manager with adc inside.
var binary string

func TestMain(m *testing.M) {
	path, err := kcmADC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kcm:", err)
		os.Exit(1)
	}
	binary = path
	code := framework.RunWithOptions(m, framework.Options{
		ControlPlane: controlplane.Options{AuditPolicy: framework.AuditPolicy},
		AfterTests: func(cp *framework.ControlPlane, _ bool) error {
			// Stopped before the check, so that its requests are complete in the log.
			stopOperatorKCM()
			return checkAudit(cp)
		},
	})
	stopOperatorKCM()
	os.Exit(code)
}

// kcmADC returns the binary to test: KCM_ADC_BINARY when set, else the one `make kcm-adc`
// builds, brought up to date with adc's sources first (a no-op when it is; minutes on a cold
// build cache), so that `go test` alone never runs a stale adc.
func kcmADC() (string, error) {
	if path := os.Getenv("KCM_ADC_BINARY"); path != "" {
		return path, nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	build := exec.Command(filepath.Join(root, "hack", "build-kcm-adc.sh"))
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building kube-controller-manager with adc (hack/build-kcm-adc.sh): %w", err)
	}
	return filepath.Join(root, "bin", "kcm-adc", "kube-controller-manager-adc"), nil
}
