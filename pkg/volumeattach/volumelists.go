package volumeattach

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/migration"
)

// SameVolumes reports whether two status.volumesAttached lists hold the same volumes with the
// same device paths, in any order: equal lists need no write.
func SameVolumes(a, b []v1.AttachedVolume) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[v1.UniqueVolumeName]string, len(a))
	for _, v := range a {
		m[v.Name] = v.DevicePath
	}
	for _, v := range b {
		if p, ok := m[v.Name]; !ok || p != v.DevicePath {
			return false
		}
	}
	return true
}

// OnlyAdds reports whether want keeps everything have lists: a write that only adds volumes
// may wait to batch more, one that removes any may not.
func OnlyAdds(want, have []v1.AttachedVolume) bool {
	m := make(map[v1.UniqueVolumeName]bool, len(want))
	for _, v := range want {
		m[v.Name] = true
	}
	for _, v := range have {
		if !m[v.Name] {
			return false
		}
	}
	return true
}

// VolumeSet is the set of unique names a status list holds.
func VolumeSet(vols []v1.AttachedVolume) map[v1.UniqueVolumeName]bool {
	set := make(map[v1.UniqueVolumeName]bool, len(vols))
	for _, v := range vols {
		set[v.Name] = true
	}
	return set
}

// AttachedInAPI reads from the API server whether the volume with this unique name is
// attached to node: for a CSI volume, its VolumeAttachment (named from handle, driver and
// node) exists attached. A volume of no CSI driver cannot be checked there: it counts as
// attached. It is the proof a status write needs before it drops a volume its cache no longer
// shows.
func AttachedInAPI(ctx context.Context, client kubernetes.Interface, node, unique string) (bool, error) {
	driver, handle, ok := migration.ParseCSIUniqueName(unique)
	if !ok {
		return true, nil
	}
	name := migration.VolumeAttachmentName(handle, driver, node)
	va, err := client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading VolumeAttachment %s to confirm volume %s left node %s before removing it from node status: %w", name, unique, node, err)
	}
	return va.Status.Attached, nil
}
