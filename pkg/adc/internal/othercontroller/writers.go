package othercontroller

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// ErrFenced is the error of a write refused while another attach/detach controller writes.
// The reconciles do not decide while fenced; the writers refuse too, so that a write decided
// just before the fence, still queued, is not sent after it.
var ErrFenced = errors.New("another attach/detach controller is writing volume attachments (Event reason OtherAttachDetachController): " +
	"adc writes nothing until it has been quiet for the quiet period; switch off kube-controller-manager's attach/detach controller " +
	"(--controllers=*,-persistentvolume-attach-detach-controller)")

// Attachments refuses VolumeAttachment writes while the guard fences adc.
type Attachments struct {
	Inner volumeattach.AttachmentWriter
	Guard *Guard
}

var _ volumeattach.AttachmentWriter = Attachments{}

// Create implements volumeattach.AttachmentWriter.
func (a Attachments) Create(ctx context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	if _, fenced := a.Guard.Fenced(); fenced {
		return nil, fmt.Errorf("not creating VolumeAttachment %s for node %s: %w", va.Name, va.Spec.NodeName, ErrFenced)
	}
	return a.Inner.Create(ctx, va)
}

// Delete implements volumeattach.AttachmentWriter.
func (a Attachments) Delete(ctx context.Context, name string, uid types.UID) error {
	if _, fenced := a.Guard.Fenced(); fenced {
		return fmt.Errorf("not deleting VolumeAttachment %s: %w", name, ErrFenced)
	}
	return a.Inner.Delete(ctx, name, uid)
}

// Status refuses node status writes while the guard fences adc.
type Status struct {
	Inner volumeattach.StatusWriter
	Guard *Guard
}

var _ volumeattach.StatusWriter = Status{}

// PatchVolumesAttached implements volumeattach.StatusWriter.
func (s Status) PatchVolumesAttached(ctx context.Context, nodeName string, volumes []v1.AttachedVolume) (*v1.Node, error) {
	if _, fenced := s.Guard.Fenced(); fenced {
		return nil, fmt.Errorf("not writing status.volumesAttached of node %s: %w", nodeName, ErrFenced)
	}
	return s.Inner.PatchVolumesAttached(ctx, nodeName, volumes)
}
