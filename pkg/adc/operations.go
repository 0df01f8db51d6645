package adc

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

func (c *Controller) completed(op Operation) {
	c.ops.Add(op)
	if c.opts.Observer != nil {
		c.opts.Observer.OperationCompleted(op)
	}
}

func (c *Controller) forced(reason string) {
	if c.opts.Observer != nil {
		c.opts.Observer.ForcedDetach(reason)
	}
}

// startOp records the start of a CSI attach or detach; the VolumeAttachment informer ends it.
func (c *Controller) startOp(kind OperationKind, va *storagev1.VolumeAttachment, p *pair, now time.Time) {
	op := Operation{Kind: kind, Node: va.Spec.NodeName, Volume: va.Name, Plugin: CSIPluginLabel(va.Spec.Attacher), Mechanism: migration.MechanismCSI, Started: now}
	if p != nil {
		op.Volume = p.ids.CSIUnique
		if p.d.InTreePlugin != "" {
			op.Plugin, op.Migrated = p.d.InTreePlugin, true
		}
	} else if plugin, ok := c.migratedPluginOf(va); ok {
		// A detach (or an attach adc did not start) of a migrated in-tree volume is labelled
		// with its in-tree plugin, as upstream does, also when adc did not see its attach.
		op.Plugin, op.Migrated = plugin, true
	}
	c.pending.Start(va.Name, op)
}

// migratedPluginOf returns the in-tree plugin a VolumeAttachment's volume was migrated from.
func (c *Controller) migratedPluginOf(va *storagev1.VolumeAttachment) (string, bool) {
	src := va.Spec.Source
	if src.InlineVolumeSpec != nil {
		return migration.MigratedPluginOf(nil, true, va.Spec.Attacher)
	}
	if src.PersistentVolumeName == nil {
		return "", false
	}
	return migration.MigratedPluginOf(c.lookups.PersistentVolume(*src.PersistentVolumeName), false, va.Spec.Attacher)
}

// abortOp forgets an operation whose request failed before it started.
func (c *Controller) abortOp(vaName string) { c.pending.Abort(vaName) }

// completedInTree records a synchronous in-tree attach or detach.
func (c *Controller) completedInTree(kind OperationKind, node string, vol InTreeVolume, start time.Time, err error) {
	op := Operation{Kind: kind, Node: node, Volume: vol.UniqueName, Plugin: vol.Plugin, Mechanism: migration.MechanismInTree,
		Started: start, Duration: c.opts.Clock.Since(start)}
	if err != nil {
		op.Err = err.Error()
	}
	c.completed(op)
}

// CSIPluginLabel is the volume_plugin label of a native CSI volume, as upstream reports it.
func CSIPluginLabel(driver string) string { return "kubernetes.io/csi:" + driver }

// endAttachIfDone ends an attach when the informer shows the VolumeAttachment attached or failed.
func (c *Controller) endAttachIfDone(va *storagev1.VolumeAttachment) {
	if !va.Status.Attached && va.Status.AttachError == nil {
		return
	}
	now := c.opts.Clock.Now()
	op, ok := c.pending.AttachEnded(va.Name)
	if !ok {
		return
	}
	op.Duration = now.Sub(op.Started)
	if !va.Status.Attached {
		op.Err = va.Status.AttachError.Message
	}
	c.completed(op)
}

// vaDeleted ends a detach when the VolumeAttachment is gone.
func (c *Controller) vaDeleted(va *storagev1.VolumeAttachment) {
	now := c.opts.Clock.Now()
	op, ok := c.pending.DetachEnded(va.Name)
	if !ok {
		return
	}
	op.Duration = now.Sub(op.Started)
	c.completed(op)
}
