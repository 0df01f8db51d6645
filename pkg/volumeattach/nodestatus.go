package volumeattach

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// StatusWriter replaces a Node's status.volumesAttached. adc is the only writer of that field
// (the kubelet owns volumesInUse), so the whole list is written in one merge patch, with no
// read first. It returns the Node as the API server stored it, so the caller knows what it
// wrote even while its Node informer lags behind.
type StatusWriter interface {
	PatchVolumesAttached(ctx context.Context, nodeName string, volumes []v1.AttachedVolume) (*v1.Node, error)
}

// ClientStatusWriter patches Node status through a clientset.
type ClientStatusWriter struct {
	Client kubernetes.Interface
}

var _ StatusWriter = &ClientStatusWriter{}

type volumesAttachedPatch struct {
	Status struct {
		// A nil slice marshals to null, which removes the field in a merge patch.
		VolumesAttached []v1.AttachedVolume `json:"volumesAttached"`
	} `json:"status"`
}

// VolumesAttachedPatch returns the JSON merge patch that sets status.volumesAttached.
func VolumesAttachedPatch(volumes []v1.AttachedVolume) ([]byte, error) {
	var p volumesAttachedPatch
	if len(volumes) > 0 {
		p.Status.VolumesAttached = volumes
	}
	return json.Marshal(p)
}

// PatchVolumesAttached implements StatusWriter.
func (w *ClientStatusWriter) PatchVolumesAttached(ctx context.Context, nodeName string, volumes []v1.AttachedVolume) (*v1.Node, error) {
	data, err := VolumesAttachedPatch(volumes)
	if err != nil {
		return nil, fmt.Errorf("encoding status.volumesAttached of node %s: %w", nodeName, err)
	}
	node, err := w.Client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return nil, fmt.Errorf("patching status.volumesAttached of node %s (%d volumes): %w", nodeName, len(volumes), err)
	}
	return node, nil
}
