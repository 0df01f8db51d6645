package cached

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/migration-aware/adc/pkg/adc/internal/othercontroller"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// cachedVA is what adc's own VolumeAttachment informer keeps of a trimmed VolumeAttachment:
// its identity, spec and status without the attachment metadata. A storagev1.VolumeAttachment
// is 344 bytes however empty (a 352-byte allocation), one per attached volume; this is 200
// (208). object() rebuilds the trimmed VolumeAttachment for the code that reads them (inside
// kube-controller-manager the host's informers hold whole ones).
type cachedVA struct {
	compactMeta
	attacher, nodeName string
	// creator is the field manager that created it (package othercontroller).
	creator     string
	pvName      *string
	inline      *v1.PersistentVolumeSpec
	attached    bool
	attachError *storagev1.VolumeError
	detachError *storagev1.VolumeError
}

var (
	_ runtime.Object                          = &cachedVA{}
	_ compactForm[storagev1.VolumeAttachment] = &cachedVA{}
)

// GetObjectKind implements runtime.Object; a cachedVA carries no type metadata.
func (a *cachedVA) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (a *cachedVA) DeepCopyObject() runtime.Object {
	return compactVA(a.object().DeepCopy())
}

// compactVA turns a VolumeAttachment trimmed by TrimInformerObjects into its cached form.
func compactVA(va *storagev1.VolumeAttachment) *cachedVA {
	return &cachedVA{compactMeta: compactMetaOf(&va.ObjectMeta), creator: volumeattach.Creator(va), attacher: va.Spec.Attacher, nodeName: va.Spec.NodeName,
		pvName: va.Spec.Source.PersistentVolumeName, inline: va.Spec.Source.InlineVolumeSpec, attached: va.Status.Attached,
		attachError: va.Status.AttachError, detachError: va.Status.DetachError}
}

// object rebuilds the trimmed VolumeAttachment; it shares the source, the errors and the
// metadata's maps with the cache, as a lister's object does.
func (a *cachedVA) object() *storagev1.VolumeAttachment {
	meta := a.objectMeta()
	meta.ManagedFields = othercontroller.CreatorManagedFields(a.creator)
	return &storagev1.VolumeAttachment{ObjectMeta: meta,
		Spec: storagev1.VolumeAttachmentSpec{Attacher: a.attacher, NodeName: a.nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: a.pvName, InlineVolumeSpec: a.inline}},
		Status: storagev1.VolumeAttachmentStatus{Attached: a.attached, AttachError: a.attachError, DetachError: a.detachError}}
}

// vaOf gives the VolumeAttachment an informer event or store entry holds, whole (a host's
// informer) or compact (adc's own).
func VAOf(obj interface{}) (*storagev1.VolumeAttachment, bool) {
	return objectOf[storagev1.VolumeAttachment](obj)
}
