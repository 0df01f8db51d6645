// Package dashboard runs the controller on the test control plane with a seeded mid-rollout
// cluster, serves its dashboard, and checks what a real browser (headless Chromium driven by
// chromedp) shows, and what `adc status` prints for the same cluster.
package dashboard

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is built once for the package, for the `adc status` test.
var adcBinary string

func TestMain(m *testing.M) { framework.MainWithADC(m, func(p string) { adcBinary = p }) }
