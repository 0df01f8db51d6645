package attachstate

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
)

func newTestVA(name, node, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
}

func TestVASources(t *testing.T) {
	pvs := testPVs{"pv1": "h1", "pv1-again": "h1"}
	vol := migration.CSIUniqueName("d", "h1")
	s := newVASources()
	a, b := newTestVA("csi-a", "n1", "pv1"), newTestVA("csi-b", "n2", "pv1-again")
	s.add(a, pvs)
	s.add(a, pvs)
	if got := len(s.byVolume.Values(vol)); got != 1 {
		t.Fatalf("adding twice kept %d entries, want 1", got)
	}
	if got := s.nodeOtherThan(vol, "n2"); got != "n1" {
		t.Errorf("nodeOtherThan(n2) = %q, want n1", got)
	}
	if got := s.nodeOtherThan(vol, "n1"); got != "" {
		t.Errorf("nodeOtherThan(n1) = %q, want none: its own attachment does not count", got)
	}
	s.add(b, pvs)
	if got := s.remove(a); got != vol {
		t.Errorf("remove returned %q, want %q", got, vol)
	}
	if got := s.nodeOtherThan(vol, "n1"); got != "n2" {
		t.Errorf("another PersistentVolume of the same disk: nodeOtherThan(n1) = %q, want n2", got)
	}
	s.remove(b)
	s.remove(b)
	if s.byVolume.Len() != 0 || s.len() != 0 {
		t.Errorf("removing every attachment left %d keys, %d objects", s.byVolume.Len(), s.len())
	}
	inline := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-i"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}}}
	s.add(inline, pvs)
	if got := s.nodeOtherThan(migration.CSIUniqueName("d", "h"), "n2"); got != "n1" {
		t.Errorf("inline volume: nodeOtherThan(n2) = %q, want n1", got)
	}
	if got := s.nodeOtherThan("kubernetes.io/gce-pd/d", "n2"); got != "" {
		t.Errorf("an in-tree name found %q", got)
	}
}

func TestVASourcesUnnamed(t *testing.T) {
	vol := migration.CSIUniqueName("d", "h1")
	// Its PersistentVolume is gone: the object's name still tells its volume.
	gone := newTestVA(migration.VolumeAttachmentName("h1", "d", "n1"), "n1", "deleted-pv")
	other := newTestVA(migration.VolumeAttachmentName("h2", "d", "n1"), "n1", "deleted-pv2")
	s := newVASources()
	s.add(gone, testPVs{})
	s.add(other, testPVs{})
	if got := s.nodeOtherThan(vol, "n2"); got != "n1" {
		t.Errorf("nodeOtherThan(n2) = %q, want n1 (named by its VolumeAttachment name)", got)
	}
	if !s.isOf(gone.Name, vol) || s.isOf(other.Name, vol) {
		t.Errorf("isOf: gone %t (want true), other %t (want false)", s.isOf(gone.Name, vol), s.isOf(other.Name, vol))
	}
	// Its PersistentVolume shows up in the cache later (start-up): filed under its volume.
	s.rename(testPVs{"deleted-pv2": "h2"})
	if len(s.unnamed) != 1 || s.volumeOf[other.Name] != migration.CSIUniqueName("d", "h2") {
		t.Errorf("rename: unnamed %d (want 1), %s filed under %q", len(s.unnamed), other.Name, s.volumeOf[other.Name])
	}
	s.remove(gone)
	s.remove(other)
	if s.len() != 0 {
		t.Errorf("left %d objects", s.len())
	}
}
