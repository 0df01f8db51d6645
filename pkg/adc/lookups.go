package adc

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// lookups backs the decision engine's lookups with informer listers: no API reads on the
// hot path.
type lookups struct {
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
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
	pvc, err := l.pvcs.PersistentVolumeClaims(namespace).Get(name)
	if err != nil {
		return nil
	}
	return pvc
}

// PersistentVolume implements migration.ClaimLookup.
func (l lookups) PersistentVolume(name string) *v1.PersistentVolume {
	pv, err := l.pvs.Get(name)
	if err != nil {
		return nil
	}
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
