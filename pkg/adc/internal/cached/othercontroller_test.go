package cached

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// adc's trimmed caches keep, of managedFields, what the guard against a second attach/detach
// controller reads: a Node's owner of status.volumesAttached and a VolumeAttachment's
// creator. Trimming twice changes nothing.
func TestTrimKeepsWhoWroteWhatADCOwns(t *testing.T) {
	fields := func(s string) *metav1.FieldsV1 { return metav1.NewFieldsV1(s) }
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{"f:status":{"f:volumesInUse":{},"f:images":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{"f:status":{"f:volumesAttached":{},"f:conditions":{}}}`)},
	}}}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va1", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{"f:spec":{"f:attacher":{}}}`)},
		{Manager: "csi-attacher", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{"f:metadata":{"f:finalizers":{}}}`)},
	}}, Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1"}}
	for round := 1; round <= 2; round++ {
		out, err := Transform(node)
		if err != nil {
			t.Fatal(err)
		}
		node = out.(*v1.Node)
		if got := volumeattach.VolumesAttachedOwner(node); got != "kube-controller-manager" || len(node.ManagedFields) != 1 {
			t.Errorf("round %d: node keeps %d entries, owner %q; want 1, kube-controller-manager", round, len(node.ManagedFields), got)
		}
		vout, err := Transform(va)
		if err != nil {
			t.Fatal(err)
		}
		full, ok := VAOf(vout)
		if !ok {
			t.Fatalf("round %d: %T is not a VolumeAttachment", round, vout)
		}
		if got := volumeattach.Creator(full); got != "kube-controller-manager" || len(full.ManagedFields) != 1 {
			t.Errorf("round %d: VolumeAttachment keeps %d entries, creator %q; want 1, kube-controller-manager", round, len(full.ManagedFields), got)
		}
		va = full
	}
}
