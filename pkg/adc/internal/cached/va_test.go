package cached

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
)

// TestCachedVARebuildsTheTrimmedVA: the compact VolumeAttachment gives back exactly the
// trimmed one, whatever its source and status, and indexes like it.
func TestCachedVARebuildsTheTrimmedVA(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "csi-1", UID: "uid-1", ResourceVersion: "4", Finalizers: []string{"external-attacher/d"},
		Annotations:   map[string]string{"csi.alpha.kubernetes.io/node-id": "i-1"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "csi-attacher"}}}
	cases := map[string]storagev1.VolumeAttachment{
		"persistent volume, attached": {ObjectMeta: meta, Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/xvdb"}}},
		"inline, failing, being deleted": {ObjectMeta: withDeletion(meta, ptr.To(metav1.Now())), Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1",
			Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}},
			Status: storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Message: "boom", ErrorCode: ptr.To[int32](5)},
				DetachError: &storagev1.VolumeError{Message: "stuck"}}},
		"no source": {ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
	}
	for name, va := range cases {
		t.Run(name, func(t *testing.T) {
			trimmed, cached := checkCompactForm[storagev1.VolumeAttachment, *cachedVA](t, &va, VAOf)
			if trimmed.Finalizers != nil || trimmed.Annotations != nil || trimmed.Status.AttachmentMetadata != nil {
				t.Errorf("trimming kept what nothing reads: %+v", trimmed)
			}
			whole, _ := VANodeName(&va)
			fromCache, _ := VANodeName(cached)
			if whole != fromCache {
				t.Errorf("node index keys differ: whole %v, cached %v", whole, fromCache)
			}
			rebuilt, _ := VAOf(cached)
			pvs := onePV{}
			got, _ := migration.VolumeOfAttachment(rebuilt, pvs)
			want, _ := migration.VolumeOfAttachment(&va, pvs)
			if got != want {
				t.Errorf("volume %q, want %q", got, want)
			}
		})
	}
}

// onePV names every PersistentVolume as volume h of driver d.
type onePV struct{}

func (onePV) PVCSIIdentity(string) (string, string, bool) { return "d", "h", true }
