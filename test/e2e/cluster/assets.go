package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// AssetsEnv, when set, is the folder with kube-scheduler and the stock kube-controller-manager
// instead of the source tree's bin/envtest/1.36.3 (KUBEBUILDER_ASSETS may point at a
// downloaded control plane without them, so it is not used for these).
const AssetsEnv = "CLUSTER_ASSETS"

// KCMADCEnv, when set, is the kube-controller-manager with adc inside to run instead of
// bin/kcm-adc/kube-controller-manager-adc.
const KCMADCEnv = "KCM_ADC_BINARY"

// Assets are the binaries a cluster runs on top of the end-to-end harness's.
type Assets struct {
	// Scheduler is kube-scheduler v1.36.3.
	Scheduler string
	// StockKCM is the stock kube-controller-manager v1.36.3.
	StockKCM string
	// KCMADC is kube-controller-manager v1.36.3 with adc inside.
	KCMADC string
}

// sourceRoot is the root of the source tree this package was built from.
func sourceRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// FindAssets returns where the binaries are: $CLUSTER_ASSETS (else bin/envtest/1.36.3) for
// kube-scheduler and kube-controller-manager, $KCM_ADC_BINARY (else bin/kcm-adc) for the
// one with adc inside. It fails naming the make target that builds a missing one, except for
// the one with adc inside, which only the kcm-adc mode needs (Options.HarnessOptions checks).
func FindAssets() (Assets, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		dir = filepath.Join(sourceRoot(), "bin", "envtest", "1.36.3")
	}
	a := Assets{
		Scheduler: filepath.Join(dir, "kube-scheduler"),
		StockKCM:  filepath.Join(dir, "kube-controller-manager"),
		KCMADC:    os.Getenv(KCMADCEnv),
	}
	if a.KCMADC == "" {
		a.KCMADC = filepath.Join(sourceRoot(), "bin", "kcm-adc", "kube-controller-manager-adc")
	}
	for _, b := range []string{a.Scheduler, a.StockKCM} {
		if err := present(b, "make cluster-assets (or set "+AssetsEnv+")"); err != nil {
			return a, err
		}
	}
	return a, nil
}

// present fails naming target when binary is missing.
func present(binary, target string) error {
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("cluster binary %s not found: run `%s`: %w", binary, target, err)
	}
	return nil
}

// ControllerManager returns the kube-controller-manager binary of mode.
func (a Assets) ControllerManager(m Mode) string {
	if m == KCMADC {
		return a.KCMADC
	}
	return a.StockKCM
}
