package adc

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/migration"
)

// NodeFlip is a node reporting an in-tree plugin migrated, or no longer migrated: the
// moments an operator following a rollout (or a rollback) wants to see.
type NodeFlip struct {
	Time   time.Time
	Node   string
	Plugin string
	// Migrated is the new state.
	Migrated bool
}

// recentFlipsSize bounds the flips kept for the dashboard.
const recentFlipsSize = 100

// flipTracker remembers each managed node's last reported plugin states and the recent
// flips. The controller feeds it on every reconcile of a node, which every CSINode and
// CSINodeInfo change triggers, so no flip that reaches the caches is missed.
type flipTracker struct {
	recent *recent[NodeFlip]

	mu     sync.Mutex
	states map[string]migration.PluginStates
}

// observe records the node's current states and returns its flips since the last call.
func (t *flipTracker) observe(node string, states migration.PluginStates, now time.Time) []NodeFlip {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[string]migration.PluginStates{}
	}
	before, known := t.states[node]
	t.states[node] = states
	if !known {
		return nil
	}
	var out []NodeFlip
	for _, f := range migration.Flips(before, states) {
		flip := NodeFlip{Time: now, Node: node, Plugin: f.Plugin, Migrated: f.Migrated}
		out = append(out, flip)
		t.recent.add(flip)
	}
	return out
}

// forget drops a node adc no longer manages.
func (t *flipTracker) forget(node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, node)
}

// RecentFlips returns the last flips of managed nodes (at most 100), newest first.
func (c *Controller) RecentFlips() []NodeFlip { return c.flips.recent.list() }

// trackFlips records the node's reported plugin states and reports its flips.
func (c *Controller) trackFlips(logger klog.Logger, node *v1.Node, now time.Time) {
	states := migration.NodePluginStates(c.opts.Migration.NodeSource, c.nodeObjects(node))
	for _, f := range c.flips.observe(node.Name, states, now) {
		logger.V(2).Info("Node flipped an in-tree plugin", "plugin", f.Plugin, "migrated", f.Migrated)
		if c.opts.Observer != nil {
			c.opts.Observer.NodeFlip(f.Plugin)
		}
	}
}
