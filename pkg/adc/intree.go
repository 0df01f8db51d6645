package adc

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
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

// noInTreeAttacherReason says why an in-tree volume is held when no InTreeAttacher is
// configured, and how to fix it. The fix depends on why the volume is in-tree: the node is
// not migrated (migrate it; what it must report depends on the node source), adc has the
// plugin's migration off (migrating only the node would be version skew), or the plugin has
// no CSI migration at all.
func noInTreeAttacherReason(cfg *migration.Config, node, plugin, driver, volume string) string {
	const host = "run adc inside a host that provides the in-tree attacher (kube-controller-manager)"
	switch {
	case !migration.IsMigratablePlugin(plugin) || driver == "":
		return fmt.Sprintf("%s has no CSI migration and this adc has no in-tree attacher, so volume %q is not attached on node %q; %s, or move the data to a volume of a CSI driver",
			plugin, volume, node, host)
	case cfg.Mode(plugin) == migration.ModeOff:
		return fmt.Sprintf("migration of %s is off in adc and this adc has no in-tree attacher, so volume %q is not attached on node %q; "+
			"set --migration %s=on and migrate the node to CSI driver %s (or set it to complete), or %s",
			plugin, volume, node, plugin, driver, host)
	}
	reports := fmt.Sprintf("its kubelet then lists %s in the CSINode annotation %s", plugin, migration.MigratedPluginsAnnotation)
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo {
		reports = fmt.Sprintf("its CSINodeInfo then reports driver %s available with volumePluginMechanism csi", driver)
	}
	return fmt.Sprintf("node %q is not migrated for %s and this adc has no in-tree attacher, so volume %q is not attached; "+
		"migrate the node to CSI driver %s (%s), or %s", node, plugin, volume, driver, reports, host)
}
