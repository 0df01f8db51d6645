package adc

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// lookups backs the decision engine's lookups with informer caches: no API reads on the
// hot path. The claim and volume stores hold v1 objects (a host's informers) or adc's compact
// forms (its own); both read the same.
type lookups struct {
	pvcs    cache.Indexer
	pvs     cache.Indexer
	drivers storagelisters.CSIDriverLister
	// seed reads seed-API CSIDrivers; nil when the driver-info source does not use them.
	seed *seedDriverSource
}

var (
	_ migration.ClaimLookup  = lookups{}
	_ migration.DriverLookup = lookups{}
)

// PersistentVolumeClaim implements migration.ClaimLookup.
func (l lookups) PersistentVolumeClaim(namespace, name string) *v1.PersistentVolumeClaim {
	obj, ok, err := l.pvcs.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	pvc, _ := claimOf(obj)
	return pvc
}

// PersistentVolume implements migration.ClaimLookup.
func (l lookups) PersistentVolume(name string) *v1.PersistentVolume {
	obj, ok, err := l.pvs.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	pv, _ := pvOf(obj)
	return pv
}

// CSIDriver implements migration.DriverLookup.
func (l lookups) CSIDriver(name string) *storagev1.CSIDriver {
	d, err := l.drivers.Get(name)
	if err != nil {
		return nil
	}
	return d
}

// SeedCSIDriver implements migration.DriverLookup.
func (l lookups) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	return l.seed.get(name)
}
