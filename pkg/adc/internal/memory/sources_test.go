package memory

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func newTestVA(name, node, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
}

func TestVASources(t *testing.T) {
	s := newVASources()
	a, b := newTestVA("csi-a", "n1", "pv1"), newTestVA("csi-b", "n2", "pv1")
	s.add(a)
	s.add(a)
	if got := len(s.m.Values(volumeKey{pv: "pv1"})); got != 1 {
		t.Fatalf("adding twice kept %d entries, want 1", got)
	}
	if got := s.nodeOtherThan("pv:pv1", "n2"); got != "n1" {
		t.Errorf("nodeOtherThan(n2) = %q, want n1", got)
	}
	if got := s.nodeOtherThan("pv:pv1", "n1"); got != "" {
		t.Errorf("nodeOtherThan(n1) = %q, want none: its own attachment does not count", got)
	}
	s.add(b)
	s.remove(a)
	if got := s.nodeOtherThan("pv:pv1", "n1"); got != "n2" {
		t.Errorf("after removing n1's, nodeOtherThan(n1) = %q, want n2", got)
	}
	s.remove(b)
	s.remove(b)
	if s.m.Len() != 0 {
		t.Errorf("removing every attachment left %d keys", s.m.Len())
	}
	s.add(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "no-source"}})
	if s.m.Len() != 0 {
		t.Errorf("a VolumeAttachment without a source was recorded: %d keys", s.m.Len())
	}
	inline := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-i"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}}}
	s.add(inline)
	if got := s.nodeOtherThan(SourceKey(inline), "n2"); got != "n1" {
		t.Errorf("inline volume: nodeOtherThan(n2) = %q, want n1", got)
	}
	if got := s.nodeOtherThan("intree:kubernetes.io/gce-pd/d", "n2"); got != "" {
		t.Errorf("an in-tree key found %q", got)
	}
}
