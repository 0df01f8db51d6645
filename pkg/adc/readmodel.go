package adc

// What the controller tells its readers (pkg/readmodel): the pairs' snapshot, the operations
// under way and finished, the nodes' flips. Package report keeps them, each part under its
// own lock, so that metrics and the dashboard never wait on a reconcile.

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// startOp records the start of a CSI attach or detach; the VolumeAttachment informer ends it.
func (c *Controller) startOp(kind readmodel.OperationKind, va *storagev1.VolumeAttachment, p *pair, now time.Time) {
	op := readmodel.Operation{Kind: kind, Node: va.Spec.NodeName, Volume: va.Name, Plugin: readmodel.CSIPluginLabel(va.Spec.Attacher), Mechanism: migration.MechanismCSI, Started: now}
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

// recentOperationsSize is how many finished operations the dashboard can show.
const recentOperationsSize = 200

// Snapshot returns every pair's current state, sorted by node, pod and volume. It is safe
// to call from any goroutine at any time; the slice is the caller's.
func (c *Controller) Snapshot() []readmodel.PairState { return c.pairs.All() }

// RecentOperations returns the last finished attach and detach operations, newest first.
func (c *Controller) RecentOperations() []readmodel.Operation { return c.ops.Recent() }

// OperationsUnderWay returns the CSI attaches and detaches requested and not yet seen ended
// by the informer, oldest first (Duration is zero).
func (c *Controller) OperationsUnderWay() []readmodel.Operation { return c.ops.UnderWay() }

// RecentFlips returns the last flips of managed nodes (at most 100), newest first.
func (c *Controller) RecentFlips() []readmodel.NodeFlip { return c.flips.Recent() }

// trackFlips records the node's reported plugin states and reports its flips.
func (c *Controller) trackFlips(logger klog.Logger, node *v1.Node, now time.Time) {
	states := migration.NodePluginStates(c.opts.Migration.NodeSource, c.nodeObjects(node))
	for _, f := range c.flips.Observe(node.Name, states, now) {
		logger.V(2).Info("Node flipped an in-tree plugin", "plugin", f.Plugin, "migrated", f.Migrated)
		if c.opts.Observer != nil {
			c.opts.Observer.NodeFlip(f.Plugin)
		}
	}
}

// Config returns the migration configuration the controller decides with.
func (c *Controller) Config() migration.Config { return c.opts.Migration }

// ManagedNodes returns, from the informer caches, every node the controller manages with
// the objects that say its migration state, sorted by name; the rollout view counts nodes
// migrated per plugin from them.
func (c *Controller) ManagedNodes() []migration.NodeObjects {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := make([]migration.NodeObjects, 0, len(nodes))
	for _, n := range nodes {
		if !migration.IsManagedNode(n) {
			continue
		}
		out = append(out, c.nodeObjects(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodeObjects returns the node with the objects that say its migration state, from the caches.
func (c *Controller) nodeObjects(n *v1.Node) migration.NodeObjects {
	obj := migration.NodeObjects{Name: n.Name, Node: n, CSINodeInfo: c.nodeInfos.Get(n.Name)}
	obj.CSINode = cached.ByName[storagev1.CSINode](c.csiNodes, n.Name)
	return obj
}
