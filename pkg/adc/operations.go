package adc

import (
	"sort"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// OperationKind is attach or detach.
type OperationKind string

const (
	// OperationAttach: from the attach request (VolumeAttachment create, in-tree Attach) until
	// the volume is attached (status.attached, or the in-tree call returned).
	OperationAttach OperationKind = "attach"
	// OperationDetach: from the detach request until the VolumeAttachment is gone or the
	// in-tree Detach returned.
	OperationDetach OperationKind = "detach"
)

// Operation is one finished attach or detach, for metrics and the dashboard.
type Operation struct {
	Kind   OperationKind
	Node   string
	Volume string // unique name, or VolumeAttachment name when the unique name is unknown
	// Plugin is the volume plugin in upstream's metric terms: the in-tree plugin name for
	// in-tree and migrated volumes, kubernetes.io/csi:<driver> for native CSI volumes.
	Plugin    string
	Mechanism migration.Mechanism
	// Migrated is true for an in-tree volume attached through its CSI driver.
	Migrated bool
	Started  time.Time
	Duration time.Duration
	// Err is the failure message; empty for success.
	Err string
}

// Observer is told about finished operations and forced detaches, as they happen; the
// metrics package implements it. Calls must not block.
type Observer interface {
	OperationCompleted(Operation)
	ForcedDetach(reason string)
	// NodeRead is told about each fresh (quorum) read of a Node that confirms a detach, with
	// its result (NodeReadOK, NodeReadNotFound, NodeReadError): the price of never detaching
	// on a stale cache.
	NodeRead(result string)
	// NodeFlip is told about a managed node reporting plugin migrated or no longer migrated.
	NodeFlip(plugin string)
}

// ForcedDetachReason values label the forced detach counter.
const (
	ForcedDetachOutOfService = "out-of-service"
	ForcedDetachNotReady     = "timeout"
	ForcedDetachNodeDeleted  = "node-deleted"
)

// recentOperationsSize is how many finished operations the dashboard can show.
const recentOperationsSize = 200

// RecentOperations returns the last finished attach and detach operations, newest first.
func (c *Controller) RecentOperations() []Operation { return c.ops.list() }

// pendingOps are the CSI operations under way, by VolumeAttachment name, that the
// VolumeAttachment informer ends: a record for the recent-operations list and the metrics,
// not part of the controller's decisions, so it keeps its own lock apart from memory.
type pendingOps struct {
	mu        sync.Mutex
	attaching map[string]Operation
	detaching map[string]Operation
}

func newPendingOps() *pendingOps {
	return &pendingOps{attaching: map[string]Operation{}, detaching: map[string]Operation{}}
}

// start records op as under way; a detach takes the labels of the attach it follows.
func (p *pendingOps) start(name string, op Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op.Kind == OperationAttach {
		p.attaching[name] = op
		return
	}
	if prev, ok := p.attaching[name]; ok {
		op.Plugin, op.Migrated, op.Volume = prev.Plugin, prev.Migrated, prev.Volume
	}
	p.detaching[name] = op
}

// abort forgets the operations of a VolumeAttachment whose request failed or that is gone.
func (p *pendingOps) abort(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.attaching, name)
	delete(p.detaching, name)
}

// attachEnded returns and forgets the attach of name, if one is under way.
func (p *pendingOps) attachEnded(name string) (Operation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	op, ok := p.attaching[name]
	delete(p.attaching, name)
	return op, ok
}

// detachEnded returns and forgets the detach of name (and any attach), if under way.
func (p *pendingOps) detachEnded(name string) (Operation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	op, ok := p.detaching[name]
	delete(p.detaching, name)
	delete(p.attaching, name)
	return op, ok
}

// names lists the operations under way, as attach:<name> and detach:<name>, for tests.
func (p *pendingOps) names() []string {
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

func (c *Controller) completed(op Operation) {
	c.ops.add(op)
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
		op.Volume = p.ids.csiUnique
		if p.d.InTreePlugin != "" {
			op.Plugin, op.Migrated = p.d.InTreePlugin, true
		}
	} else if plugin, ok := c.migratedPluginOf(va); ok {
		// A detach (or an attach adc did not start) of a migrated in-tree volume is labelled
		// with its in-tree plugin, as upstream does, also when adc did not see its attach.
		op.Plugin, op.Migrated = plugin, true
	}
	c.pending.start(va.Name, op)
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
func (c *Controller) abortOp(vaName string) { c.pending.abort(vaName) }

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
	op, ok := c.pending.attachEnded(va.Name)
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
	op, ok := c.pending.detachEnded(va.Name)
	if !ok {
		return
	}
	op.Duration = now.Sub(op.Started)
	c.completed(op)
}
