package adc

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/migration"
)

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
