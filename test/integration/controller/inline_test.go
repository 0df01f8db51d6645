package controller

import (
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// A pod's inline gcePersistentDisk volume on a node that migrated gce-pd: its
// VolumeAttachment carries the translated spec in spec.source.inlineVolumeSpec (driver
// pd.csi.storage.gke.io; an inline volume has no zone label, so csi-translation-lib puts
// UNSPECIFIED in the zone part of the handle) and no persistentVolumeName. After the pod is
// deleted it is detached like any other.
func TestMigratedInlineVolume(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{gceDriver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	e.csiNode(node, gcePlugin, gceDriver)
	pd := e.ns + "-disk"
	e.pod("app", node, nil, inlineGCE("disk", pd))

	handle := gceHandle("UNSPECIFIED", pd)
	name := vaName(handle, gceDriver, node)
	e.eventually("VolumeAttachment of the inline volume", 10*time.Second, e.vaExists(name))
	va, err := e.va(name)
	if err != nil {
		t.Fatal(err)
	}
	if va.Spec.Attacher != gceDriver || va.Spec.NodeName != node {
		t.Errorf("spec.attacher=%q spec.nodeName=%q, want %q and %q", va.Spec.Attacher, va.Spec.NodeName, gceDriver, node)
	}
	src := va.Spec.Source
	if src.PersistentVolumeName != nil {
		t.Errorf("spec.source.persistentVolumeName = %q, want none for an inline volume", *src.PersistentVolumeName)
	}
	switch {
	case src.InlineVolumeSpec == nil:
		t.Fatalf("spec.source.inlineVolumeSpec is missing: %+v", src)
	case src.InlineVolumeSpec.CSI == nil:
		t.Fatalf("spec.source.inlineVolumeSpec has no csi source: %+v", src.InlineVolumeSpec)
	case src.InlineVolumeSpec.CSI.Driver != gceDriver || src.InlineVolumeSpec.CSI.VolumeHandle != handle:
		t.Errorf("inlineVolumeSpec.csi = {driver %q handle %q}, want {driver %q handle %q}",
			src.InlineVolumeSpec.CSI.Driver, src.InlineVolumeSpec.CSI.VolumeHandle, gceDriver, handle)
	}
	if src.InlineVolumeSpec.GCEPersistentDisk != nil {
		t.Errorf("inlineVolumeSpec still carries the in-tree gcePersistentDisk source")
	}

	unique := csiUnique(gceDriver, handle)
	e.eventually("inline volume listed in node status", 10*time.Second, e.listedOnNode(node, unique))
	e.pairIs(ctrl.Controller, node, "app", "disk", 5*time.Second, func(s readmodel.PairState) bool {
		return s.Mechanism == migration.MechanismCSI && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == name && s.PV == ""
	})

	e.deletePod("app")
	e.eventually("inline VolumeAttachment deleted after the pod", 10*time.Second, e.vaGone(name))
	e.eventually("inline volume removed from node status", 5*time.Second, e.notListedOnNode(node, unique))
}
