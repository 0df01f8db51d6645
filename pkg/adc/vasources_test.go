package adc

import (
	"testing"
	"time"

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
	if got := len(s.m.values(volumeKey{pv: "pv1"})); got != 1 {
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
	if s.m.len() != 0 {
		t.Errorf("removing every attachment left %v", s.m.one)
	}
	s.add(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "no-source"}})
	if s.m.len() != 0 {
		t.Errorf("a VolumeAttachment without a source was recorded: %v", s.m.one)
	}
	inline := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-i"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}}}
	s.add(inline)
	if got := s.nodeOtherThan(vaSourceKey(inline), "n2"); got != "n1" {
		t.Errorf("inline volume: nodeOtherThan(n2) = %q, want n1", got)
	}
	if got := s.nodeOtherThan("intree:kubernetes.io/gce-pd/d", "n2"); got != "" {
		t.Errorf("an in-tree key found %q", got)
	}
}

// TestMultiAttachSeesAdcsCreateThroughout: a ReadWriteOnce volume adc is attaching to one node
// is never free for another, from the create until the VolumeAttachment is deleted: first the
// create expectation holds it, then, in the same step, the informer's copy.
func TestMultiAttachSeesAdcsCreateThroughout(t *testing.T) {
	c := newHandlerController(t)
	p := &pair{ids: identity{sourceKey: "pv:pv1"}}
	va := newTestVA("csi-a", "n1", "pv1")
	if other := c.reserveVolume(p, "n1"); other != "" {
		t.Fatalf("a free volume is held by %q", other)
	}
	c.expectVA(va, time.Now())
	c.createdVA(va)
	check := func(step, want string) {
		t.Helper()
		if other := c.reserveVolume(p, "n2"); other != want {
			t.Errorf("%s: reserving for n2 found %q, want %q", step, other, want)
		}
	}
	check("created, not shown yet", "n1")
	c.vaHandler().OnAdd(va, false)
	check("shown by the informer", "n1")
	c.vaHandler().OnDelete(va)
	check("deleted", "")
}
