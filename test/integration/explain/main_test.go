// Package explain runs `adc explain` against the test control plane, from the cluster alone
// and with a running adc controller's memory, and the controller's /explain and /preflight
// pages.
package explain

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is built once for the package.
var adcBinary string

func TestMain(m *testing.M) { framework.MainWithADC(m, func(p string) { adcBinary = p }) }
