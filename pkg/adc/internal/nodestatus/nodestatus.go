// Package nodestatus writes each managed node's status.volumesAttached, as
// kube-controller-manager's statusupdater does, from adc's actual state. It is apart from
// the reconcile because it runs on its own queue (the controller's status queue), coalescing
// writes per node off the per-volume path, and because it owns the per-node lock that keeps
// a status write and a reconcile's detach decisions from overlapping: the lock and the code
// that must respect it are in one place.
package nodestatus

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// Budget is a client request budget that can say whether it is spent, and if so about how
// long until a request would go (adc.APIBudget).
type Budget interface {
	Saturated() (bool, time.Duration)
}

// Options are what the updater reads and writes through.
type Options struct {
	Nodes  corelisters.NodeLister
	Memory *attachstate.State
	PVs    actual.PVIdentity
	// Client reads the VolumeAttachments that prove a removal; Writer patches node status.
	Client kubernetes.Interface
	Writer volumeattach.StatusWriter
	Clock  clock.PassiveClock
	// MaxDelay and Budget are adc's NodeStatusMaxDelay and APIBudget (see Updater.delay).
	MaxDelay time.Duration
	Budget   Budget
	// Backlogged reports whether a burst of attaches is under way (adc: at least 8 rounds of
	// the create workers decided and not yet seen attached). Then, as with a spent Budget, a
	// status patch sent now takes the turn of a create or of an attacher's status write at
	// the API server (see delay).
	Backlogged func() bool
	// Wake queues a node for reconcile: a written removal may let its detach go on.
	Wake func(node string)
}

// Updater writes nodes' status.volumesAttached; Sync writes one node.
type Updater struct {
	opts  Options
	locks Locks
}

// New returns an updater.
func New(opts Options) *Updater { return &Updater{opts: opts} }

// Locks are the per-node locks of status writes, which a reconcile's detach decisions take too.
func (u *Updater) Locks() *Locks { return &u.locks }

// Sync brings one node's status.volumesAttached in line with its attachments. It runs on its
// own queue, which coalesces writes per node by itself: a node is written at once when no
// write of it is in flight, and whatever changes while one is in flight is listed by the next
// write (the queue holds the node's key until the running write is done). Under load this
// batches several volumes into one patch; otherwise a volume waits one round trip. An
// addition waits for the node's pending attaches only under load (the client budget spent,
// or a burst of attaches under way), or always with MaxDelay set: see delay.
//
// The node's lock (Locks) covers the write only: the computation of the list from adc's
// caches and memory, and the patch. The API reads that prove removals (confirmRemovals) come
// first, without it, so a slow or throttled read holds up no detach decision of the node;
// the list is then computed again under the lock, where it sees every detach decision made
// meanwhile, and uses the proofs read. A removal that appeared in between, with no proof
// read, is kept listed this time and the node is looked at again (retryAfter), so the lock
// is never held across a read.
func (u *Updater) Sync(ctx context.Context, name string) (retryAfter time.Duration, err error) {
	proofs, err := u.proveRemovals(ctx, name)
	if err != nil {
		return 0, err
	}
	defer u.locks.Lock(name)()
	return u.write(ctx, name, proofs)
}

// proveRemovals reads from the API server, without the node's lock, whether each removal
// the node's status list needs now and memory cannot prove is still attached (see
// confirmRemovals): by unique name, true when it is. A node the lister does not have, or
// does not manage, has none: write handles it.
func (u *Updater) proveRemovals(ctx context.Context, name string) (map[v1.UniqueVolumeName]bool, error) {
	node, err := u.opts.Nodes.Get(name)
	if err != nil || !migration.IsManagedNode(node) {
		return nil, nil
	}
	mem := u.opts.Memory
	atts := actual.Read(mem, u.opts.PVs, node)
	have := mem.VolumesAttachedNow(node)
	want, _ := u.volumesAttachedFor(node, have, atts)
	unsure := mem.UnprovenRemovals(name, volumeattach.VolumeSet(want), have)
	if len(unsure) == 0 {
		return nil, nil
	}
	attached := make(map[v1.UniqueVolumeName]bool, len(unsure))
	for _, v := range unsure {
		if attached[v.Name], err = volumeattach.AttachedInAPI(ctx, u.opts.Client, name, string(v.Name)); err != nil {
			return nil, err
		}
	}
	return attached, nil
}

// reverifyAfter is when a node whose status list kept a removal that had no proof read (it
// appeared while the proofs were read) is looked at again.
const reverifyAfter = 10 * time.Millisecond

// write computes the node's status list and patches it, under the node's lock, with the
// proofs proveRemovals read (attached, by unique name). It makes no API call but the patch.
func (u *Updater) write(ctx context.Context, name string, attached map[v1.UniqueVolumeName]bool) (retryAfter time.Duration, err error) {
	logger := klog.FromContext(ctx)
	mem := u.opts.Memory
	now := u.opts.Clock.Now()
	node, err := u.opts.Nodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !migration.IsManagedNode(node)) {
		mem.ClearUnlisted(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	atts := actual.Read(mem, u.opts.PVs, node)
	have := mem.VolumesAttachedNow(node)
	want, pending := u.volumesAttachedFor(node, have, atts)
	want, unread := u.confirmRemovals(ctx, node.Name, want, have, attached)
	if unread {
		retryAfter = reverifyAfter
	}
	if volumeattach.SameVolumes(want, have) {
		mem.ClearUnlisted(name)
		return retryAfter, nil
	}
	if delay, recheck := u.delay(); delay > 0 && pending > 0 && volumeattach.OnlyAdds(want, have) {
		since := mem.UnlistedSince(name, now)
		if wait := delay - now.Sub(since); wait > 0 {
			logger.V(4).Info("Coalescing node status update", "pendingAttaches", pending, "wait", wait)
			return min(wait, recheck), nil
		}
	}
	patched, err := u.opts.Writer.PatchVolumesAttached(ctx, name, want)
	if err != nil {
		return 0, err
	}
	if patched != nil {
		mem.Wrote(name, patched.ResourceVersion, want)
	}
	mem.ClearUnlisted(name)
	if mem.RemovesDetaching(name, volumeattach.VolumeSet(want), have) {
		// A removal that gates a detach is written: the detach can go on now, without waiting
		// for the Node watch to bring the write back (it may be late; the detach itself reads
		// the node fresh).
		u.opts.Wake(name)
	}
	logger.V(4).Info("Updated node status.volumesAttached", "volumes", len(want), "previously", len(have))
	return retryAfter, nil
}

// OnlyListsMore reports whether a Node update changed nothing but its resourceVersion,
// managedFields and status.volumesAttached, keeping every volume the old one listed: mostly
// the updater's own writes coming back, for a Sync to compare, not a reconcile.
func OnlyListsMore(old, cur *v1.Node) bool {
	if !volumeattach.OnlyAdds(cur.Status.VolumesAttached, old.Status.VolumesAttached) {
		return false
	}
	o, n := *old, *cur
	o.ResourceVersion, n.ResourceVersion = "", ""
	o.ManagedFields, n.ManagedFields = nil, nil
	o.Status.VolumesAttached, n.Status.VolumesAttached = nil, nil
	return equality.Semantic.DeepEqual(&o, &n)
}

// SaturatedDelay bounds how long a newly attached volume waits for its node's pending
// attaches under load: while the client budget is spent, or while a burst of attaches is
// under way (their creates and the attacher's status writes). Then every status patch costs
// one of those writes its turn, and a volume already waits seconds for the budget or the API
// server.
const SaturatedDelay = time.Second

// delay is how long a node's additions may wait for its pending attaches now, and when to
// look again: the configured MaxDelay; else, while the API budget is spent, SaturatedDelay,
// looking again as soon as the budget has a token (a write then goes at once); else, while
// a burst of attaches is under way (Backlogged), SaturatedDelay, looked at again when the
// node's pending attaches land (each one queues the node) or the delay runs out; else
// nothing (written at once). Under load a node's volumes, attached together, are listed by
// one patch instead of two or three, which leaves the API server fewer patches to serve: the
// creates finish sooner, and the volumes are listed sooner too despite the wait.
func (u *Updater) delay() (delay, recheck time.Duration) {
	if u.opts.MaxDelay > 0 {
		return u.opts.MaxDelay, u.opts.MaxDelay
	}
	if u.opts.Budget != nil {
		if spent, refill := u.opts.Budget.Saturated(); spent {
			return SaturatedDelay, max(refill, time.Millisecond)
		}
	}
	if u.opts.Backlogged != nil && u.opts.Backlogged() {
		return SaturatedDelay, SaturatedDelay
	}
	return 0, 0
}

// volumesAttachedFor computes what the node's status.volumesAttached should list, given what
// it lists now (have), and how many attaches of the node are still in flight.
func (u *Updater) volumesAttachedFor(node *v1.Node, have []v1.AttachedVolume, atts []*actual.Attachment) ([]v1.AttachedVolume, int) {
	detaching, pending := u.opts.Memory.StatusInputs(node.Name)

	want := make([]v1.AttachedVolume, 0, len(atts))
	seen := make(map[string]bool, len(atts))
	for _, a := range atts {
		if a.VA != nil {
			if a.Deleting {
				continue
			}
			if !a.Attached {
				if a.VA.Status.AttachError == nil {
					pending++
				}
				continue
			}
		}
		if a.UniqueName == "" || detaching[a.UniqueName] || seen[a.UniqueName] {
			continue
		}
		seen[a.UniqueName] = true
		av := v1.AttachedVolume{Name: v1.UniqueVolumeName(a.UniqueName)}
		if a.InTree != nil {
			av.DevicePath = a.InTree.DevicePath
		}
		want = append(want, av)
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, pending
}

// confirmRemovals returns want, adding back every volume that have lists, want drops, and
// nothing proves detached. A removal is proven by adc's own decisions (a volume being
// detached, marked after a fresh read of the node; an in-tree attachment adc detached or its
// attacher reported detached) or, for a CSI volume, by the API server: its VolumeAttachment,
// read fresh (proveRemovals, into attached), is gone or not attached. A VolumeAttachment
// missing from adc's cache is not proof: the cache may lag (a watch gap, a relist, a slow
// handler). A removal with no read in attached is kept too (unread), to be read next time.
//
// A proof read before the node's lock was taken is as good as one read under it. What the
// lock guards against is a write listing a volume that a detach decision saw unlisted, and
// the detaching marks, read here under the lock, leave every such volume out. Dropping a
// volume is not it; and a proof was always older than the patch it allows (the patch may
// wait for the client budget), whether or not the lock was held in between.
func (u *Updater) confirmRemovals(ctx context.Context, node string, want, have []v1.AttachedVolume, attached map[v1.UniqueVolumeName]bool) (_ []v1.AttachedVolume, unread bool) {
	unsure := u.opts.Memory.UnprovenRemovals(node, volumeattach.VolumeSet(want), have)
	if len(unsure) == 0 {
		return want, false
	}
	logger := klog.FromContext(ctx)
	for _, v := range unsure {
		isAttached, read := attached[v.Name]
		switch {
		case !read:
			logger.V(4).Info("Keeping volume in node status until the API server is read: its removal came up while the others were read", "uniqueName", v.Name)
			unread = true
		case isAttached:
			logger.V(2).Info("Keeping volume in node status: adc's cache does not show its attachment but the API server does", "uniqueName", v.Name)
		default:
			continue
		}
		want = append(want, v)
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, unread
}

// Locks serialize, per node, status writes and a reconcile's detach decisions: a status write
// (computing the list and patching it) and a run's detach decisions (fresh read, then marking
// volumes detaching) never overlap for one node, so a volume a fresh read shows unlisted is
// not listed again by a write in flight before its VolumeAttachment goes. Each node has its
// own lock: a node whose write or fresh read is slow (a throttled client) holds up no other
// node. A node's lock exists only while it is held or waited for, so memory is bounded by the
// workers, not the cluster. The zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	nodes map[string]*nodeLock
}

// nodeLock is one node's lock; users counts the goroutines holding it or waiting for it.
type nodeLock struct {
	mu    sync.Mutex
	users int
}

// Lock locks the node's lock and returns the unlock, which must be called once.
func (l *Locks) Lock(node string) (unlock func()) {
	l.mu.Lock()
	if l.nodes == nil {
		l.nodes = map[string]*nodeLock{}
	}
	nl := l.nodes[node]
	if nl == nil {
		nl = &nodeLock{}
		l.nodes[node] = nl
	}
	nl.users++
	l.mu.Unlock()

	nl.mu.Lock()
	var unlocked atomic.Bool
	return func() {
		if !unlocked.CompareAndSwap(false, true) {
			panic("nodestatus: unlock of node " + node + "'s status lock called twice")
		}
		nl.mu.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.nodes, node)
		}
		l.mu.Unlock()
	}
}

// Held reports whether the node's lock is held now.
func (l *Locks) Held(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	nl := l.nodes[node]
	if nl == nil || nl.mu.TryLock() {
		if nl != nil {
			nl.mu.Unlock()
		}
		return false
	}
	return true
}

// users reports how many nodes have a lock now (held or waited for).
func (l *Locks) users() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}
