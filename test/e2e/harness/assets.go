package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// AssetsEnv, when set, is the folder with csi-attacher, hollowkubelet and csimock instead of
// the source tree's bin/e2e.
const AssetsEnv = "E2E_ASSETS"

// Binaries `make e2e-assets` builds.
const (
	attacherBinary = "csi-attacher"
	kubeletBinary  = "hollowkubelet"
	driverBinary   = "csimock"
)

// AssetsDir returns where the end-to-end binaries are: $E2E_ASSETS, else bin/e2e in the
// source tree this package was built from.
func AssetsDir() string {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "e2e")
}

// checkAssets fails with what to run when a binary is missing.
func checkAssets(dir string) error {
	for _, b := range []string{attacherBinary, kubeletBinary, driverBinary} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("end-to-end binary %s not found in %s: run `make e2e-assets` (or set %s): %w", b, dir, AssetsEnv, err)
		}
	}
	return nil
}
