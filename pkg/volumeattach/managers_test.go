package volumeattach

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestVolumesAttachedOwnerAndCreator(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		owner   string
		creator string
	}{
		{name: "nobody", owner: "", creator: ""},
		{name: "kubelet writes volumesInUse, kube-controller-manager volumesAttached", entries: []metav1.ManagedFieldsEntry{
			entry("kubelet", "status", `{"f:status":{"f:volumesInUse":{},"f:conditions":{}}}`),
			entry("kube-controller-manager", "status", `{"f:status":{"f:volumesAttached":{}}}`),
		}, owner: "kube-controller-manager"},
		{name: "adc owns the list", entries: []metav1.ManagedFieldsEntry{
			entry("adc", "status", `{"f:status":{"f:volumesAttached":{}}}`),
		}, owner: "adc"},
		{name: "volumesAttached outside status is not the list", entries: []metav1.ManagedFieldsEntry{
			entry("x", "", `{"f:metadata":{"f:volumesAttached":{}}}`),
		}},
		{name: "creator owns the spec; csi-attacher the finalizers and status", entries: []metav1.ManagedFieldsEntry{
			entry("kube-controller-manager", "", `{"f:spec":{"f:attacher":{},"f:nodeName":{}}}`),
			entry("csi-attacher", "", `{"f:metadata":{"f:finalizers":{}}}`),
			entry("csi-attacher", "status", `{"f:status":{"f:attached":{}}}`),
		}, creator: "kube-controller-manager"},
		{name: "malformed fields", entries: []metav1.ManagedFieldsEntry{entry("x", "status", `{`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.entries}}
			va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.entries}}
			if got := VolumesAttachedOwner(n); got != tc.owner {
				t.Errorf("VolumesAttachedOwner = %q, want %q", got, tc.owner)
			}
			if got := Creator(va); got != tc.creator {
				t.Errorf("Creator = %q, want %q", got, tc.creator)
			}
		})
	}
}

func TestIsKubeControllerManager(t *testing.T) {
	for manager, want := range map[string]bool{"kube-controller-manager": true, "kube-controller-manager-adc": true,
		"adc": false, "kubectl": false, "": false, "csi-attacher": false} {
		if got := IsKubeControllerManager(manager); got != want {
			t.Errorf("IsKubeControllerManager(%q) = %v, want %v", manager, got, want)
		}
	}
}
