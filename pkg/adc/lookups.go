package adc

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/seedapi"
	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// lookups backs the decision engine's lookups with informer caches: no API reads on the
// hot path. The claim and volume stores hold v1 objects (a host's informers) or adc's compact
// forms (its own); both read the same.
type lookups struct {
	pvcs    cache.Indexer
	pvs     cache.Indexer
	drivers cache.Indexer
	// seed reads seed-API CSIDrivers; nil when the driver-info source does not use them.
	seed *seedapi.DriverSource
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
	pvc, _ := cached.ClaimOf(obj)
	return pvc
}

// PersistentVolume implements migration.ClaimLookup.
func (l lookups) PersistentVolume(name string) *v1.PersistentVolume {
	obj, ok, err := l.pvs.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	pv, _ := cached.PVOf(obj)
	return pv
}

// pvCSIIdentity is migration.PVCSIIdentity of the named volume; false when it is not cached.
// Every reconcile and status write identifies each VolumeAttachment's volume, so a cached
// volume with a CSI source is read as it is, not rebuilt.
func (l lookups) pvCSIIdentity(name string) (driver, handle string, ok bool) {
	obj, exists, err := l.pvs.GetByKey(name)
	if err != nil || !exists {
		return "", "", false
	}
	if csi := cached.PVCSISource(obj); csi != nil {
		return migration.CSISourceIdentity(csi)
	}
	pv, _ := cached.PVOf(obj)
	return migration.PVCSIIdentity(pv)
}

// CSIDriver implements migration.DriverLookup.
func (l lookups) CSIDriver(name string) *storagev1.CSIDriver {
	return cachedByName[storagev1.CSIDriver](l.drivers, name)
}

// cachedByName returns the named object of a cluster-scoped informer store, or nil. Unlike a
// lister's Get it allocates no NotFound error, which every reconcile would otherwise pay for
// each volume of a driver without a CSIDriver and for a node without a CSINode.
func cachedByName[T any](store cache.Indexer, name string) *T {
	obj, ok, err := store.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

// SeedCSIDriver implements migration.DriverLookup.
func (l lookups) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	return l.seed.Get(name)
}
