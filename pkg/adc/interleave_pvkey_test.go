//go:build adc_pvkey_seam

// TODO(issue 41): drop the build constraint above once reconcile.go has the seam the pv-key
// mutant replaces (until then the mutant is skipped):
//
//	// memoryVolume names a pair's volume for memory: its ReadWriteOnce reservation, create
//	// expectation and waiters. A variable only so the interleaving explorer's pv-key mutant
//	// can put back the per-PersistentVolume key of before issue 41.
//	var memoryVolume = actual.Identity.Key
//
// used in reserve (key := memoryVolume(p.ids); Reserve(r.node.Name, key); r.waiting[key.Name]),
// in shared (r.waiting[memoryVolume(p.ids).Name]) and in attachCSI
// (key := memoryVolume(p.ids).Name; ExpectCreate(va, key, r.now); creates.Job{SourceKey: key}).

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
