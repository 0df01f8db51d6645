package adc

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// InTreeVolume identifies an in-tree volume for an InTreeAttacher. PV or Inline is set when
// the controller knows the volume's spec; after a restart, a detach may only know UniqueName.
type InTreeVolume struct {
	// Plugin is the in-tree plugin name, for example kubernetes.io/gce-pd.
	Plugin string
	// UniqueName is <plugin>/<volume id>, the name listed in Node status.volumesAttached.
	UniqueName string
	// PV is the PersistentVolume, for PV-backed volumes.
	PV *v1.PersistentVolume
	// Inline is the pod's volume, for inline volumes.
	Inline *v1.Volume
}

// InTreeAttacher attaches volumes with in-tree volume plugins. adc cannot do that on its own
// (the plugins live in k8s.io/kubernetes); a host such as kube-controller-manager provides
// one. Without it, in-tree pairs are held with a Warning Event.
type InTreeAttacher interface {
	// Attach attaches the volume to the node and returns the device path for node status.
	Attach(ctx context.Context, volume InTreeVolume, nodeName string) (devicePath string, err error)
	// Detach detaches the volume from the node; a volume that is not attached is success.
	Detach(ctx context.Context, volume InTreeVolume, nodeName string) error
	// VolumesAreAttached reports, by unique name, which volumes are still attached.
	VolumesAreAttached(ctx context.Context, volumes []InTreeVolume, nodeName string) (map[string]bool, error)
}
