package report

import (
	"sort"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// pending are the CSI operations under way, by VolumeAttachment name, that the
// VolumeAttachment informer ends: a record for the recent-operations list, the metrics and
// the node status writer's sense of load, not part of the controller's decisions, so it keeps
// its own lock apart from memory.
type pending struct {
	mu        sync.Mutex
	attaching map[string]readmodel.Operation
	detaching map[string]readmodel.Operation
}

func newPending() *pending {
	return &pending{attaching: map[string]readmodel.Operation{}, detaching: map[string]readmodel.Operation{}}
}

// Start records op as under way; a detach takes the labels of the attach it follows.
func (p *pending) Start(name string, op readmodel.Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op.Kind == readmodel.OperationAttach {
		p.attaching[name] = op
		return
	}
	if prev, ok := p.attaching[name]; ok {
		op.Plugin, op.Migrated, op.Volume = prev.Plugin, prev.Migrated, prev.Volume
	}
	p.detaching[name] = op
}

// Abort forgets the operations of a VolumeAttachment whose request failed or that is gone.
func (p *pending) Abort(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.attaching, name)
	delete(p.detaching, name)
}

// AttachEnded returns and forgets the attach of name, if one is under way.
func (p *pending) AttachEnded(name string) (readmodel.Operation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	op, ok := p.attaching[name]
	delete(p.attaching, name)
	return op, ok
}

// DetachEnded returns and forgets the detach of name (and any attach), if under way.
func (p *pending) DetachEnded(name string) (readmodel.Operation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	op, ok := p.detaching[name]
	delete(p.detaching, name)
	delete(p.attaching, name)
	return op, ok
}

// List returns the operations under way, oldest first.
func (p *pending) List() []readmodel.Operation {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]readmodel.Operation, 0, len(p.attaching)+len(p.detaching))
	for _, op := range p.attaching {
		out = append(out, op)
	}
	for _, op := range p.detaching {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].Volume < out[j].Volume
	})
	return out
}

// attaches counts the attaches under way.
func (p *pending) attaches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.attaching)
}

// Names lists the operations under way, as attach:<name> and detach:<name>, for tests.
func (p *pending) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n := range p.attaching {
		out = append(out, "attach:"+n)
	}
	for n := range p.detaching {
		out = append(out, "detach:"+n)
	}
	sort.Strings(out)
	return out
}

// Operations follows attach and detach operations from their request to their end: those
// under way (a CSI operation ends when the VolumeAttachment informer shows it done), the
// last finished ones, and the Observer (metrics), told as each ends. The controller only
// says what it requested and what the informer showed.
type Operations struct {
	pending  *pending
	recent   *Recent[readmodel.Operation]
	observer readmodel.Observer
	clock    clock.PassiveClock
}

// NewOperations keeps the last recentSize finished operations; observer may be nil.
func NewOperations(recentSize int, observer readmodel.Observer, clk clock.PassiveClock) *Operations {
	return &Operations{pending: newPending(), recent: NewRecent[readmodel.Operation](recentSize), observer: observer, clock: clk}
}

// Start records a CSI attach or detach requested for the VolumeAttachment name; the
// informer ends it (AttachObserved, Deleted).
func (o *Operations) Start(name string, op readmodel.Operation) { o.pending.Start(name, op) }

// Abort forgets the operations of a VolumeAttachment whose request failed or that is gone
// without the informer showing it.
func (o *Operations) Abort(name string) { o.pending.Abort(name) }

// AttachObserved ends an attach when the informer shows the VolumeAttachment attached or
// failed.
func (o *Operations) AttachObserved(va *storagev1.VolumeAttachment) {
	if !va.Status.Attached && va.Status.AttachError == nil {
		return
	}
	now := o.clock.Now()
	op, ok := o.pending.AttachEnded(va.Name)
	if !ok {
		return
	}
	op.Duration = now.Sub(op.Started)
	if !va.Status.Attached {
		op.Err = va.Status.AttachError.Message
	}
	o.completed(op)
}

// Deleted ends a detach when the informer shows the VolumeAttachment gone.
func (o *Operations) Deleted(va *storagev1.VolumeAttachment) {
	now := o.clock.Now()
	op, ok := o.pending.DetachEnded(va.Name)
	if !ok {
		return
	}
	op.Duration = now.Sub(op.Started)
	o.completed(op)
}

// InTree records a synchronous in-tree attach or detach of the volume (unique name, plugin)
// that started at start and returned err.
func (o *Operations) InTree(kind readmodel.OperationKind, node, uniqueName, plugin string, start time.Time, err error) {
	op := readmodel.Operation{Kind: kind, Node: node, Volume: uniqueName, Plugin: plugin, Mechanism: migration.MechanismInTree,
		Started: start, Duration: o.clock.Since(start)}
	if err != nil {
		op.Err = err.Error()
	}
	o.completed(op)
}

// Forced counts a forced detach, by the reason that forced it (readmodel.ForcedDetach values).
func (o *Operations) Forced(reason string) {
	if o.observer != nil {
		o.observer.ForcedDetach(reason)
	}
}

func (o *Operations) completed(op readmodel.Operation) {
	o.recent.Add(op)
	if o.observer != nil {
		o.observer.OperationCompleted(op)
	}
}

// AttachesUnderWay counts the CSI attaches requested and not yet seen ended: decided and
// queued, being created, or waiting for the attacher. It is the attach backlog the API server
// and the attachers work through, which the node status writer reads as load.
func (o *Operations) AttachesUnderWay() int { return o.pending.attaches() }

// UnderWay returns the operations requested and not yet seen ended, oldest first.
func (o *Operations) UnderWay() []readmodel.Operation { return o.pending.List() }

// Recent returns the last finished operations, newest first.
func (o *Operations) Recent() []readmodel.Operation { return o.recent.List() }

// Names lists the operations under way, as attach:<name> and detach:<name>, for tests.
func (o *Operations) Names() []string { return o.pending.Names() }
