// The pv-key mutant puts back the key of before issue 41: memory's reservation, create
// expectation and waiters of a volume keyed by PersistentVolume name, through reconcile.go's
// memoryVolume seam.

package adc

import (
	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
)

func init() {
	installPVKey = func(key func(actual.Identity) memory.Volume) func() {
		prev := memoryVolume
		memoryVolume = key
		return func() { memoryVolume = prev }
	}
}
