package adc

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// InTreeVolume identifies an in-tree volume for an InTreeAttacher. PV or Inline is set when
// the controller knows the volume's spec; after a restart, a detach may only know UniqueName.
// It is memory's type: in-tree attachments have no API object, memory holds them.
type InTreeVolume = memory.InTreeVolume

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

// verifyInTree asks the in-tree attacher whether the node's in-tree attachments that adc
// remembers are still attached, every InTreeVerifyPeriod per node, as kube-controller-manager's
// reconciler does (its syncStates, every --attach-detach-reconcile-sync-period). One the
// attacher reports detached is forgotten: it leaves node status, and a pod that still needs it
// gets it attached again. An error, or a volume the answer leaves out, keeps what adc knows.
// It returns when to verify the node again (0: nothing to verify).
func (c *Controller) verifyInTree(ctx context.Context, node string, now time.Time) time.Duration {
	attacher, period := c.opts.InTreeAttacher, c.opts.InTreeVerifyPeriod
	if attacher == nil {
		return 0
	}
	vols, due := c.mem.InTreeDue(node, now, period)
	if len(vols) == 0 {
		return due
	}

	logger := klog.FromContext(ctx)
	attached, err := attacher.VolumesAreAttached(ctx, vols, node)
	if err != nil {
		logger.Error(err, "Verifying in-tree attachments with the in-tree attacher failed; keeping them as they are", "volumes", len(vols))
		return period
	}
	for _, v := range vols {
		if isAttached, reported := attached[v.UniqueName]; reported && !isAttached {
			logger.V(2).Info("The in-tree attacher reports the volume detached; forgetting its attachment", "uniqueName", v.UniqueName)
			for _, n := range c.mem.ForgetInTree(node, v.UniqueName) {
				c.enqueueNode(n)
			}
		}
	}
	return period
}
