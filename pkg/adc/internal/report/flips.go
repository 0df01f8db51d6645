package report

import (
	"sync"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// recentFlipsSize bounds the flips kept for the dashboard.
const recentFlipsSize = 100

// Flips remembers each managed node's last reported plugin states and the recent
// flips. The controller feeds it on every reconcile of a node, which every CSINode and
// CSINodeInfo change triggers, so no flip that reaches the caches is missed.
type Flips struct {
	recent *Recent[readmodel.NodeFlip]

	mu     sync.Mutex
	states map[string]migration.PluginStates
}

// Observe records the node's current states and returns its flips since the last call.
func (t *Flips) Observe(node string, states migration.PluginStates, now time.Time) []readmodel.NodeFlip {
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
	var out []readmodel.NodeFlip
	for _, f := range migration.Flips(before, states) {
		flip := readmodel.NodeFlip{Time: now, Node: node, Plugin: f.Plugin, Migrated: f.Migrated}
		out = append(out, flip)
		t.recent.Add(flip)
	}
	return out
}

// Forget drops a node adc no longer manages.
func (t *Flips) Forget(node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, node)
}

// NewFlips returns a tracker that keeps the last 100 flips.
func NewFlips() *Flips { return &Flips{recent: NewRecent[readmodel.NodeFlip](recentFlipsSize)} }

// Recent returns the last flips, newest first.
func (t *Flips) Recent() []readmodel.NodeFlip { return t.recent.List() }
