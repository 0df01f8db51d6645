package migration

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// Objects are the lists an ObjectIndex is built from, typically the Items of one List call
// per resource.
type Objects struct {
	PVCs         []v1.PersistentVolumeClaim
	PVs          []v1.PersistentVolume
	CSIDrivers   []storagev1.CSIDriver
	CSINodes     []storagev1.CSINode
	CSINodeInfos []csinodeinfo.CSINodeInfo
	Nodes        []v1.Node

	// SeedCSIDrivers are the seed-API csi.storage.k8s.io/v1alpha1 CSIDrivers, listed only
	// when the driver-info source reads them (seed, auto).
	SeedCSIDrivers []seedcsidriver.CSIDriver
}

type namespacedName struct{ namespace, name string }

// ObjectIndex answers by-name lookups over listed objects. It implements ClaimLookup and
// DriverLookup so `adc plan` and tests can run the same code as the controller without
// informers. It points into the slices it was built from; do not modify them afterwards.
// A nil *ObjectIndex behaves as an empty index.
type ObjectIndex struct {
	pvcs         map[namespacedName]*v1.PersistentVolumeClaim
	pvs          map[string]*v1.PersistentVolume
	drivers      map[string]*storagev1.CSIDriver
	seedDrivers  map[string]*seedcsidriver.CSIDriver
	csiNodes     map[string]*storagev1.CSINode
	csiNodeInfos map[string]*csinodeinfo.CSINodeInfo
	nodes        map[string]*v1.Node
}

// NewObjectIndex indexes objs by name (and namespace for claims). When a list holds two
// objects with the same name the last one wins.
func NewObjectIndex(objs Objects) *ObjectIndex {
	x := &ObjectIndex{
		pvcs:         make(map[namespacedName]*v1.PersistentVolumeClaim, len(objs.PVCs)),
		pvs:          make(map[string]*v1.PersistentVolume, len(objs.PVs)),
		drivers:      make(map[string]*storagev1.CSIDriver, len(objs.CSIDrivers)),
		seedDrivers:  make(map[string]*seedcsidriver.CSIDriver, len(objs.SeedCSIDrivers)),
		csiNodes:     make(map[string]*storagev1.CSINode, len(objs.CSINodes)),
		csiNodeInfos: make(map[string]*csinodeinfo.CSINodeInfo, len(objs.CSINodeInfos)),
		nodes:        make(map[string]*v1.Node, len(objs.Nodes)),
	}
	for i := range objs.PVCs {
		o := &objs.PVCs[i]
		x.pvcs[namespacedName{o.Namespace, o.Name}] = o
	}
	for i := range objs.PVs {
		x.pvs[objs.PVs[i].Name] = &objs.PVs[i]
	}
	for i := range objs.CSIDrivers {
		x.drivers[objs.CSIDrivers[i].Name] = &objs.CSIDrivers[i]
	}
	for i := range objs.SeedCSIDrivers {
		x.seedDrivers[objs.SeedCSIDrivers[i].Name] = &objs.SeedCSIDrivers[i]
	}
	for i := range objs.CSINodes {
		x.csiNodes[objs.CSINodes[i].Name] = &objs.CSINodes[i]
	}
	for i := range objs.CSINodeInfos {
		x.csiNodeInfos[objs.CSINodeInfos[i].Name] = &objs.CSINodeInfos[i]
	}
	for i := range objs.Nodes {
		x.nodes[objs.Nodes[i].Name] = &objs.Nodes[i]
	}
	return x
}

// PersistentVolumeClaim implements ClaimLookup.
func (x *ObjectIndex) PersistentVolumeClaim(namespace, name string) *v1.PersistentVolumeClaim {
	if x == nil {
		return nil
	}
	return x.pvcs[namespacedName{namespace, name}]
}

// PersistentVolume implements ClaimLookup.
func (x *ObjectIndex) PersistentVolume(name string) *v1.PersistentVolume {
	if x == nil {
		return nil
	}
	return x.pvs[name]
}

// CSIDriver implements DriverLookup.
func (x *ObjectIndex) CSIDriver(name string) *storagev1.CSIDriver {
	if x == nil {
		return nil
	}
	return x.drivers[name]
}

// SeedCSIDriver implements DriverLookup.
func (x *ObjectIndex) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	if x == nil {
		return nil
	}
	return x.seedDrivers[name]
}

// Node returns the Node named name, or nil.
func (x *ObjectIndex) Node(name string) *v1.Node {
	if x == nil {
		return nil
	}
	return x.nodes[name]
}

// CSINode returns the CSINode named name, or nil.
func (x *ObjectIndex) CSINode(name string) *storagev1.CSINode {
	if x == nil {
		return nil
	}
	return x.csiNodes[name]
}

// CSINodeInfo returns the CSINodeInfo named name, or nil.
func (x *ObjectIndex) CSINodeInfo(name string) *csinodeinfo.CSINodeInfo {
	if x == nil {
		return nil
	}
	return x.csiNodeInfos[name]
}

// NodeObjects gathers the per-node objects of node name for DecidePodVolume.
func (x *ObjectIndex) NodeObjects(name string) NodeObjects {
	return NodeObjects{Name: name, Node: x.Node(name), CSINode: x.CSINode(name), CSINodeInfo: x.CSINodeInfo(name)}
}
