// Package cli runs the adc binary's subcommands against the test control plane.
package cli

import (
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adcBinary is built once for the package.
var adcBinary string

func TestMain(m *testing.M) { framework.MainWithADC(m, func(p string) { adcBinary = p }) }
