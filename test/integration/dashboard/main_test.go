// Package dashboard runs the controller on the test control plane with a seeded mid-rollout
// cluster, serves its dashboard, and checks what a real browser (headless Chromium driven by
// chromedp) shows, and what `adc status` prints for the same cluster.
package dashboard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is built once for the package, for the `adc status` test.
var adcBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "adc-dashboard-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	adcBinary = filepath.Join(dir, "adc")
	build := exec.Command("go", "build", "-o", adcBinary, "github.com/migration-aware/adc/cmd/adc")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building adc:", err)
		os.Exit(1)
	}
	code := framework.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
