// Package nodestatus writes each managed node's status.volumesAttached, as
// kube-controller-manager's statusupdater does, from adc's actual state. It is apart from
// the reconcile because it runs on its own queue (the controller's status queue), coalescing
// writes per node off the per-volume path, and because it owns the per-node lock that keeps
// a status write and a reconcile's detach decisions from overlapping: the lock and the code
// that must respect it are in one place.
package nodestatus

import (
	"context"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
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
	Memory *memory.Memory
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
func (u *Updater) Sync(ctx context.Context, name string) (retryAfter time.Duration, err error) {
	logger := klog.FromContext(ctx)
	mem := u.opts.Memory
	defer u.locks.Lock(name)()
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
	if want, err = u.confirmRemovals(ctx, node.Name, want, have); err != nil {
		return 0, err
	}
	if volumeattach.SameVolumes(want, have) {
		mem.ClearUnlisted(name)
		return 0, nil
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
	return 0, nil
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
// one patch instead of two or three: at 1000 x 10 (docs/performance.md, issue #28) that left
// the creates 3 s sooner and listed volumes sooner too, the API server having fewer patches
// to serve.
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
// read fresh, is gone or not attached. A VolumeAttachment missing from adc's cache is not
// proof: the cache may lag (a watch gap, a relist, a slow handler).
func (u *Updater) confirmRemovals(ctx context.Context, node string, want, have []v1.AttachedVolume) ([]v1.AttachedVolume, error) {
	unsure := u.opts.Memory.UnprovenRemovals(node, volumeattach.VolumeSet(want), have)
	if len(unsure) == 0 {
		return want, nil
	}
	logger := klog.FromContext(ctx)
	for _, v := range unsure {
		attached, err := volumeattach.AttachedInAPI(ctx, u.opts.Client, node, string(v.Name))
		if err != nil {
			return nil, err
		}
		if attached {
			logger.V(2).Info("Keeping volume in node status: adc's cache does not show its attachment but the API server does", "uniqueName", v.Name)
			want = append(want, v)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, nil
}

// lockStripes is how many locks the nodes' status locks are spread over.
const lockStripes = 1024

// Locks serialize, per node, status writes and a reconcile's detach decisions: a status write
// (compute and patch) and a run's detach decisions (fresh read, then marking volumes
// detaching) never overlap for one node. Nodes share stripes, so memory does not grow with
// the cluster; a detach decision is two API calls, rare next to writes.
type Locks struct {
	stripes [lockStripes]sync.Mutex
}

// Lock locks the node's stripe and returns the unlock.
func (l *Locks) Lock(node string) (unlock func()) {
	mu := l.Stripe(node)
	mu.Lock()
	return mu.Unlock
}

// Stripe is the lock the node's status writes and detach decisions take; two nodes on the
// same stripe wait for each other (the interleaving explorer models that).
func (l *Locks) Stripe(node string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return &l.stripes[h.Sum32()%lockStripes]
}
