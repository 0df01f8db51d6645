// Package report keeps what adc reports about itself, apart from what it decides with: the
// snapshot of every (pod volume, node) pair, the attach and detach operations under way and
// finished, and the nodes' migration flips, in the types of pkg/readmodel. Metrics, the
// dashboard and the demo read it through the controller; each part keeps its own lock so
// that a reader never waits on a reconcile.
package report

import (
	"sort"
	"sync"
	"time"
	"unique"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// pairRecord is a PairState as the snapshot keeps it, one per pair of every node (tens of
// thousands): the node is the snapshot's key, times are Unix nanoseconds, and the strings most
// pairs share (plugin, driver, mechanism, phase, the decision's reason: one reason for every
// volume of a driver) are unique handles, so a reason is kept once however many pairs give it.
// 152 bytes against 240 for a PairState and its own copy of the reason.
type pairRecord struct {
	pod, volume, pv, va, uniqueName string
	plugin, driver, reason          unique.Handle[string]
	mechanism                       unique.Handle[migration.Mechanism]
	phase                           unique.Handle[readmodel.Phase]
	retries                         int
	nextRetry, since                int64
	// detach is set only for pairs of nodes that are not Ready (few).
	detach *migration.DetachVerdict
}

func recordOf(s *readmodel.PairState) pairRecord {
	return pairRecord{pod: s.Pod, volume: s.Volume, pv: s.PV, va: s.VolumeAttachment, uniqueName: s.UniqueName,
		plugin: unique.Make(s.Plugin), driver: unique.Make(s.Driver), reason: unique.Make(s.Reason),
		mechanism: unique.Make(s.Mechanism), phase: unique.Make(s.Phase),
		retries: s.Retries, nextRetry: unixNano(s.NextRetry), since: unixNano(s.Since), detach: s.Detach}
}

func (r *pairRecord) state(node string) readmodel.PairState {
	return readmodel.PairState{Node: node, Pod: r.pod, Volume: r.volume, PV: r.pv, Plugin: r.plugin.Value(), Driver: r.driver.Value(),
		Mechanism: r.mechanism.Value(), Phase: r.phase.Value(), Reason: r.reason.Value(), Retries: r.retries,
		NextRetry: fromUnixNano(r.nextRetry), VolumeAttachment: r.va, UniqueName: r.uniqueName, Since: fromUnixNano(r.since), Detach: r.detach}
}

// unixNano keeps the zero time as 0 so that it comes back as the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Pairs is the snapshot of every node's pairs, written by the node's reconcile and read by
// metrics, the dashboard and the demo from any goroutine. It keeps its own lock.
type Pairs struct {
	mu     sync.RWMutex
	byNode map[string][]pairRecord
	// syncing counts the running reconciles per node (see MarkAttached).
	syncing map[string]int
}

// NewPairs returns an empty snapshot.
func NewPairs() *Pairs {
	return &Pairs{byNode: map[string][]pairRecord{}, syncing: map[string]int{}}
}

// All returns every pair's current state, sorted by node, pod and volume; the slice is the
// caller's.
func (p *Pairs) All() []readmodel.PairState {
	p.mu.RLock()
	n := 0
	for _, s := range p.byNode {
		n += len(s)
	}
	out := make([]readmodel.PairState, 0, n)
	for node, s := range p.byNode {
		for i := range s {
			out = append(out, s[i].state(node))
		}
	}
	p.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Volume != b.Volume {
			return a.Volume < b.Volume
		}
		return a.VolumeAttachment < b.VolumeAttachment
	})
	return out
}

// BeginSync marks a node's reconcile as running until the returned func is called:
// MarkAttached leaves the node's pairs to that reconcile, which may have read the
// VolumeAttachment before it became attached.
func (p *Pairs) BeginSync(node string) (end func()) {
	p.mu.Lock()
	p.syncing[node]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.syncing[node]--; p.syncing[node] <= 0 {
			delete(p.syncing, node)
		}
		p.mu.Unlock()
	}
}

// MarkAttached moves the node's pairs waiting for the VolumeAttachment vaName to attached, as
// a reconcile of the node would, without one: when the attacher reports a volume attached,
// nothing a reconcile decides changes but those pairs' phase (the status worker lists the
// volume). It reports false when the node's pairs must be reconciled instead: its reconcile
// is running, or no pair waits for that VolumeAttachment.
func (p *Pairs) MarkAttached(node, vaName string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.syncing[node] > 0 {
		return false
	}
	marked := false
	records := p.byNode[node]
	attaching := unique.Make(readmodel.PhaseAttaching)
	for i := range records {
		if r := &records[i]; r.va == vaName && r.phase == attaching {
			// The informer's copy of the name, not the decision's: one copy fewer per volume.
			r.va, r.phase, r.since = vaName, unique.Make(readmodel.PhaseAttached), unixNano(now)
			marked = true
		}
	}
	return marked
}

// Set replaces a node's pairs (none: forgets the node), carrying over Since for pairs whose
// phase did not change.
func (p *Pairs) Set(node string, states []readmodel.PairState, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(states) == 0 {
		delete(p.byNode, node)
		return
	}
	prev := make(map[[4]string]*pairRecord, len(p.byNode[node]))
	for i := range p.byNode[node] {
		r := &p.byNode[node][i]
		prev[[4]string{r.pod, r.volume, r.va, r.uniqueName}] = r
	}
	records := make([]pairRecord, len(states))
	for i := range states {
		r := recordOf(&states[i])
		if old := prev[[4]string{r.pod, r.volume, r.va, r.uniqueName}]; old != nil && old.phase == r.phase && old.since != 0 {
			r.since = old.since
		} else {
			r.since = unixNano(now)
		}
		records[i] = r
	}
	p.byNode[node] = records
}
