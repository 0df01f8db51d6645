package adc

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// startOp records the start of a CSI attach or detach; the VolumeAttachment informer ends it.
func (c *Controller) startOp(kind OperationKind, va *storagev1.VolumeAttachment, p *pair, now time.Time) {
	op := Operation{Kind: kind, Node: va.Spec.NodeName, Volume: va.Name, Plugin: CSIPluginLabel(va.Spec.Attacher), Mechanism: migration.MechanismCSI, Started: now}
	if p != nil {
		op.Volume = p.ids.Volume
		if p.d.InTreePlugin != "" {
			op.Plugin, op.Migrated = p.d.InTreePlugin, true
		}
	} else if plugin, ok := c.migratedPluginOf(va); ok {
		// A detach (or an attach adc did not start) of a migrated in-tree volume is labelled
		// with its in-tree plugin, as upstream does, also when adc did not see its attach.
		op.Plugin, op.Migrated = plugin, true
	}
	c.ops.Start(va.Name, op)
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

// CSIPluginLabel is the volume_plugin label of a native CSI volume, as upstream reports it.
func CSIPluginLabel(driver string) string { return "kubernetes.io/csi:" + driver }
