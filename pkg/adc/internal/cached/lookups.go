package cached

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// Lookups backs the decision engine's lookups with informer caches: no API reads on the
// hot path. The claim and volume stores hold v1 objects (a host's informers) or adc's compact
// forms (its own); both read the same.
type Lookups struct {
	PVCs    cache.Indexer
	PVs     cache.Indexer
	Drivers cache.Indexer
	// Seed reads seed-API CSIDrivers; nil when the driver-info source does not use them.
	Seed interface {
		Get(name string) *seedcsidriver.CSIDriver
	}
}

var _ migration.Lookup = Lookups{}

// PersistentVolumeClaim implements migration.ClaimLookup.
func (l Lookups) PersistentVolumeClaim(namespace, name string) *v1.PersistentVolumeClaim {
	obj, ok, err := l.PVCs.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	pvc, _ := ClaimOf(obj)
	return pvc
}

// PersistentVolume implements migration.ClaimLookup.
func (l Lookups) PersistentVolume(name string) *v1.PersistentVolume {
	obj, ok, err := l.PVs.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	pv, _ := PVOf(obj)
	return pv
}

// PVCSIIdentity is migration.PVCSIIdentity of the named volume; false when it is not cached.
// Every reconcile and status write identifies each VolumeAttachment's volume, so a cached
// volume with a CSI source is read as it is, not rebuilt.
func (l Lookups) PVCSIIdentity(name string) (driver, handle string, ok bool) {
	obj, exists, err := l.PVs.GetByKey(name)
	if err != nil || !exists {
		return "", "", false
	}
	if csi := PVCSISource(obj); csi != nil {
		return migration.CSISourceIdentity(csi)
	}
	pv, _ := PVOf(obj)
	return migration.PVCSIIdentity(pv)
}

// CSIDriver implements migration.DriverLookup.
func (l Lookups) CSIDriver(name string) *storagev1.CSIDriver {
	return ByName[storagev1.CSIDriver](l.Drivers, name)
}

// ByName returns the named object of a cluster-scoped informer store, or nil. Unlike a
// lister's Get it allocates no NotFound error, which every reconcile would otherwise pay for
// each volume of a driver without a CSIDriver and for a node without a CSINode.
func ByName[T any](store cache.Indexer, name string) *T {
	obj, ok, err := store.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

// SeedCSIDriver implements migration.DriverLookup.
func (l Lookups) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	if l.Seed == nil {
		return nil
	}
	return l.Seed.Get(name)
}
