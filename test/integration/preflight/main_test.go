// Package preflight runs `adc preflight` against the test control plane: each case seeds a
// cluster with one kind of finding and checks the exact findings (-o json) and the exit code.
package preflight

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is built once for the package.
var adcBinary string

func TestMain(m *testing.M) { framework.MainWithADC(m, func(p string) { adcBinary = p }) }
