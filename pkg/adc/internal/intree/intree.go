// Package intree is adc's side of the in-tree attacher boundary. adc cannot attach a volume
// of an in-tree plugin on its own (the plugins live in k8s.io/kubernetes): a host such as
// kube-controller-manager gives it an Attacher. Those attachments have no API object, so
// memory holds them, and what memory holds must follow what the attacher says. Plugins makes
// every call to the attacher, records it as an operation and tells memory the answer, and
// checks now and then that what memory remembers is still attached, as
// kube-controller-manager's reconciler does (syncStates). Without an attacher in-tree volumes
// are held, and HeldReason says how to fix that.
package intree

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/report"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// Attacher attaches volumes with in-tree volume plugins (adc.InTreeAttacher, which hosts
// implement). Without it, in-tree pairs are held with a Warning Event.
type Attacher interface {
	// Attach attaches the volume to the node and returns the device path for node status.
	Attach(ctx context.Context, volume attachstate.InTreeVolume, nodeName string) (devicePath string, err error)
	// Detach detaches the volume from the node; a volume that is not attached is success.
	Detach(ctx context.Context, volume attachstate.InTreeVolume, nodeName string) error
	// VolumesAreAttached reports, by unique name, which volumes are still attached.
	VolumesAreAttached(ctx context.Context, volumes []attachstate.InTreeVolume, nodeName string) (map[string]bool, error)
}

// Options are the attacher and what its answers are recorded in.
type Options struct {
	// Attacher is nil when the host provides none.
	Attacher Attacher
	Memory   *attachstate.State
	Ops      *report.Operations
	Clock    clock.PassiveClock
	// VerifyPeriod is how often a node's remembered attachments are verified.
	VerifyPeriod time.Duration
	// Wake queues a node for reconcile: a volume it waited for is free.
	Wake func(node string)
}

// Plugins calls the in-tree attacher.
type Plugins struct{ opts Options }

// New returns the boundary to opts.Attacher.
func New(opts Options) *Plugins { return &Plugins{opts: opts} }

// Available reports whether this adc has an in-tree attacher.
func (p *Plugins) Available() bool { return p.opts.Attacher != nil }

// Attach attaches the volume to the node and records the operation. The ReadWriteOnce
// reservation the reconcile took for the attach (of vol.Name) ends with the answer: memory
// remembers the attachment, with its device path, if it was made; if not, the nodes that
// waited for the volume are woken, since it is free again.
func (p *Plugins) Attach(ctx context.Context, vol attachstate.InTreeVolume, node string) (devicePath string, err error) {
	start := p.opts.Clock.Now()
	devicePath, err = p.opts.Attacher.Attach(ctx, vol, node)
	p.opts.Ops.InTree(readmodel.OperationAttach, node, vol.UniqueName, vol.Plugin, start, err)
	if err != nil {
		p.wake(p.opts.Memory.Release(vol.Name, node))
		return "", err
	}
	p.opts.Memory.InTreeAttached(node, vol, devicePath)
	return devicePath, nil
}

// Detach detaches the volume from the node and records the operation (forced: the reason
// label of a forced detach, or ""). Once detached, memory forgets the attachment and the
// nodes that waited for the volume are woken.
func (p *Plugins) Detach(ctx context.Context, vol attachstate.InTreeVolume, node, forced string) error {
	start := p.opts.Clock.Now()
	err := p.opts.Attacher.Detach(ctx, vol, node)
	p.opts.Ops.InTree(readmodel.OperationDetach, node, vol.UniqueName, vol.Plugin, start, err)
	if err != nil {
		return err
	}
	if forced != "" {
		p.opts.Ops.Forced(forced)
	}
	klog.FromContext(ctx).V(2).Info("Detached in-tree volume", "uniqueName", vol.UniqueName)
	p.wake(p.opts.Memory.ForgetInTree(node, vol.UniqueName))
	return nil
}

// Verify asks the in-tree attacher whether the node's in-tree attachments that adc
// remembers are still attached, every VerifyPeriod per node, as kube-controller-manager's
// reconciler does (its syncStates, every --attach-detach-reconcile-sync-period). One the
// attacher reports detached is forgotten: it leaves node status, and a pod that still needs it
// gets it attached again. An error, or a volume the answer leaves out, keeps what adc knows.
// It returns when to verify the node again (0: nothing to verify).
func (p *Plugins) Verify(ctx context.Context, node string, now time.Time) time.Duration {
	attacher, period := p.opts.Attacher, p.opts.VerifyPeriod
	if attacher == nil {
		return 0
	}
	vols, due := p.opts.Memory.InTreeDue(node, now, period)
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
			p.wake(p.opts.Memory.ForgetInTree(node, v.UniqueName))
		}
	}
	return period
}

func (p *Plugins) wake(nodes []string) {
	for _, n := range nodes {
		if n != "" {
			p.opts.Wake(n)
		}
	}
}

// HeldReason says why an in-tree volume is held when no Attacher is configured, and how to
// fix it. The fix depends on why the volume is in-tree: the node is not migrated (migrate it;
// what it must report depends on the node source), adc has the plugin's migration off
// (migrating only the node would be version skew), or the plugin has no CSI migration at all.
func HeldReason(cfg *migration.Config, node, plugin, driver, volume string) string {
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
