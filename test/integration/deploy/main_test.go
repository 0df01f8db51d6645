// Package deploy tests the manifests of deploy/kubernetes on a real control plane: the
// controller runs as the adc ServiceAccount with exactly the RBAC shipped there, both
// in-process and as the adc binary with the Deployment's arguments and leader election.
package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is the adc command, built once for the package.
var adcBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "adc-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	adcBinary = filepath.Join(dir, "adc")
	build := exec.Command("go", "build", "-o", adcBinary, "github.com/migration-aware/adc/cmd/adc")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building adc:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := framework.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
