package volumeattach

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// AttachmentWriter creates and deletes VolumeAttachments. It is an interface so tests and
// hosts can wrap it (count, fail, delay) without a fake clientset.
type AttachmentWriter interface {
	// Create creates the VolumeAttachment and returns it as stored (UID and resourceVersion
	// set), so the caller's expectation can be matched against what its informer shows later.
	// One that already exists counts as success and is returned as it is, so a restarted
	// controller never fails on, or duplicates, its own earlier work.
	Create(ctx context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error)
	// Delete deletes the VolumeAttachment with the given UID; a missing one counts as success.
	Delete(ctx context.Context, name string, uid types.UID) error
}

// ClientAttachmentWriter writes VolumeAttachments through a clientset.
type ClientAttachmentWriter struct {
	Client kubernetes.Interface
}

var _ AttachmentWriter = &ClientAttachmentWriter{}

// NewVolumeAttachment builds the VolumeAttachment the kubelet and the external-attacher
// expect: no finalizers (the external-attacher adds its own), attacher = driver.
func NewVolumeAttachment(name, driver, nodeName string, source storagev1.VolumeAttachmentSource) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: driver,
			NodeName: nodeName,
			Source:   *source.DeepCopy(),
		},
	}
}

// Create implements AttachmentWriter.
func (w *ClientAttachmentWriter) Create(ctx context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	api := w.Client.StorageV1().VolumeAttachments()
	created, err := api.Create(ctx, va, metav1.CreateOptions{FieldManager: FieldManager})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating VolumeAttachment %s for driver %s on node %s: %w", va.Name, va.Spec.Attacher, va.Spec.NodeName, err)
	}
	// Rare (a restart raced its own earlier create, or the informer is behind): read the
	// existing object once so the caller knows which one it is waiting for.
	existing, err := api.Get(ctx, va.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading VolumeAttachment %s, which already exists, for node %s: %w", va.Name, va.Spec.NodeName, err)
	}
	return existing, nil
}

// Delete implements AttachmentWriter.
func (w *ClientAttachmentWriter) Delete(ctx context.Context, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := w.Client.StorageV1().VolumeAttachments().Delete(ctx, name, opts)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) {
		// The UID precondition failed: the object was replaced; the replacement is a new
		// attachment that the next reconcile judges on its own.
		return nil
	}
	return fmt.Errorf("deleting VolumeAttachment %s: %w", name, err)
}

// CreatedByAttachDetachController reads the VolumeAttachment named name fresh, with its
// managedFields (informer caches keep none), and reports whether an attach/detach controller
// created it: adc's field manager, or kube-controller-manager's (its built-in controller,
// before adc took over); not a kubelet's. found is false when it no longer exists.
func CreatedByAttachDetachController(ctx context.Context, client kubernetes.Interface, name string) (ours, found bool, err error) {
	va, err := client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, err
	}
	for _, m := range va.ManagedFields {
		if m.Operation == metav1.ManagedFieldsOperationUpdate && attachDetachManagers[m.Manager] {
			return true, true, nil
		}
	}
	return false, true, nil
}

// attachDetachManagers are the field managers of attach/detach controllers: adc's, and
// kube-controller-manager's.
var attachDetachManagers = map[string]bool{FieldManager: true, KubeControllerManager: true}
