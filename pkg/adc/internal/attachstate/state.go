// Package attachstate is the attach state adc keeps between reconciles: the actual state its
// informer caches cannot show (in-tree attachments, what a node's status lists) or cannot show
// yet (creates sent, detaches decided), and adc's expectations of them (create expectations,
// ReadWriteOnce reservations, detaching marks). Everything else is derived from the caches on
// every reconcile, so a restart loses nothing that matters. The controller calls it its
// memory (Controller.mem).
//
// One type, State, owns this state and its lock. The controller changes it only through
// State's operations; each runs under the lock in one step and keeps the invariants below.
// Tests call Check after every step they drive (the safety tests, the interleaving explorer).
//
//   - ReadWriteOnce exclusivity: from the moment a volume is reserved for a node (Reserve)
//     until that node's attachment is proven gone (the informer's delete, or its store synced
//     past the delete), another node's Reserve of the volume returns the holder: the volume is
//     always in at least one of the reservation, the node's create expectation and the
//     VolumeAttachment sources. An expectation ends only in the step that puts its object into
//     the sources (Observed, Created, ObserveFromStore) or on proof that it is gone (Gone,
//     ExpectationGone, ResolveUncertain, CreateFailed).
//   - An expectation ends only on evidence about that object: its UID, or an object under the
//     name that is newer than it (a replacement).
//   - Node status never drops a volume that may still be attached and in use, except on a
//     decision made from the fresh read: UnprovenRemovals names every removal that neither a
//     detaching mark (set after the fresh read of the node) nor an in-tree tombstone proves,
//     and the status writer reads those from the API server before it drops them.
//   - Every entry is bounded by live cluster objects: per-node state is kept only for nodes
//     the Node store holds or that still have VolumeAttachments (in the store or expected);
//     per-pod holds and Events only while the node's last reconcile renewed them; nothing
//     grows with churn (Check, Leftovers).
package attachstate

import (
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// Store is what Memory reads of the informer caches, under its lock: the VolumeAttachment
// store (client-go updates it before it calls the handlers, so an object can be in the store
// and not yet in the sources), and whether the Node store holds a node.
type Store interface {
	// VolumeAttachment returns the object the VolumeAttachment store holds under name.
	VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool)
	// VolumeAttachmentsOnNode lists the store's VolumeAttachments of a node.
	VolumeAttachmentsOnNode(node string) []*storagev1.VolumeAttachment
	// NodeKnown reports whether the Node store holds the node.
	NodeKnown(node string) bool
}

// Clock is the time Memory stamps entries with.
type Clock interface{ Now() time.Time }

// Options configure a Memory.
type Options struct {
	// Store is read under Memory's lock.
	Store Store
	// Volumes names the volume of a VolumeAttachment's PersistentVolume (the informer
	// cache), read under Memory's lock; nil names only inline volumes.
	Volumes migration.PVIdentityLookup
	// Clock stamps in-tree verification times.
	Clock Clock
	// NewBackOff returns the backoff of a newly held pair.
	NewBackOff func() *backoff.ExponentialBackOff
}

// State is adc's memory between reconciles, behind one lock (see the package comment for
// its invariants). The zero value is not usable: use New.
type State struct {
	opts Options
	mu   sync.Mutex

	// expected are VolumeAttachments created (or being created) that the informer has not
	// shown yet, so a reconcile in between neither creates them again nor misses them.
	expected expectations
	// sources are the VolumeAttachments the informer shows, by volume.
	sources vaSources
	// deletes are VolumeAttachment deletes sent, by name, for the UID they were for.
	deletes map[string]deleteRequest
	// reservations hold a ReadWriteOnce volume for the node whose attach is in flight, by
	// the volume's unique name.
	reservations map[string]string
	// waiters are, per volume (unique name), the nodes whose pods wait for the volume to
	// leave another node.
	waiters map[string]*waiting

	// inTree holds in-tree attachments per node, by unique name (they have no API object);
	// inTreeVerified is when each node's were last checked with the in-tree attacher.
	inTree         map[string]map[string]InTreeAttachment
	inTreeVerified map[string]time.Time
	// inTreeForgotten are, per node, in-tree attachments dropped (detached, or reported
	// detached) that node status may still list: not learned again from it.
	inTreeForgotten map[string]map[string]bool

	// managed is, per node seen, whether it carries the managed annotation.
	managed map[string]bool
	// detaching holds, per node, the unique names to drop from status.volumesAttached before
	// their detach.
	detaching map[string]map[string]bool
	// creating counts, per node, CSI attaches decided and not yet created.
	creating map[string]int
	// unlistedSince is when the oldest attached-but-unlisted volume of a node was first seen.
	unlistedSince map[string]time.Time
	// written is, per node, the status.volumesAttached adc wrote last, until the Node
	// informer shows that write.
	written map[string]writtenStatus

	// detachVolumes are, by volume, what a pod said DetachPolicies select the volume by,
	// for attachments that cannot say it themselves (detachvolumes.go).
	detachVolumes map[string]migration.DetachVolume

	// held tracks the backoff of pairs held in wait or error, per node.
	held map[string]map[PairKey]*heldPair
	// events remembers, per node, the last Event message per pod (or the node) and reason.
	events map[string]map[EventKey]string
}

// New returns an empty Memory.
func New(opts Options) *State {
	return &State{
		opts:            opts,
		expected:        newExpectations(),
		sources:         newVASources(),
		deletes:         map[string]deleteRequest{},
		reservations:    map[string]string{},
		waiters:         map[string]*waiting{},
		detachVolumes:   map[string]migration.DetachVolume{},
		inTree:          map[string]map[string]InTreeAttachment{},
		inTreeVerified:  map[string]time.Time{},
		inTreeForgotten: map[string]map[string]bool{},
		managed:         map[string]bool{},
		detaching:       map[string]map[string]bool{},
		creating:        map[string]int{},
		unlistedSince:   map[string]time.Time{},
		written:         map[string]writtenStatus{},
		held:            map[string]map[PairKey]*heldPair{},
		events:          map[string]map[EventKey]string{},
	}
}

// Busy reports whether an operation holds the lock now. A test harness that parks threads
// at store reads uses it to never park one inside an operation.
func (m *State) Busy() bool {
	if m.mu.TryLock() {
		m.mu.Unlock()
		return false
	}
	return true
}

// waiting are the nodes waiting for one volume, and the in-tree unique name under which a
// node lists the volume when its in-tree plugin attached it (so that the in-tree detach of
// an attachment learned from node status, which knows only that name, wakes them).
type waiting struct {
	nodes      map[string]bool
	inTreeName string
}

// takeWaitersLocked returns and forgets the nodes waiting for the volume.
func (m *State) takeWaitersLocked(volume string) []string {
	if volume == "" {
		return nil
	}
	w := m.waiters[volume]
	if w == nil {
		return nil
	}
	nodes := make([]string, 0, len(w.nodes))
	for n := range w.nodes {
		nodes = append(nodes, n)
	}
	delete(m.waiters, volume)
	return nodes
}

// volumeOfInTreeLocked is the unique name of the volume an in-tree attachment attaches: the
// one adc decided when it attached it, else the one a waiting node decided for the in-tree
// name (an attachment learned from node status knows only that), else the in-tree name.
func (m *State) volumeOfInTreeLocked(it InTreeAttachment) string {
	if it.Volume.Name != "" {
		return it.Volume.Name
	}
	for volume, w := range m.waiters {
		if w.inTreeName == it.Volume.UniqueName {
			return volume
		}
	}
	return it.Volume.UniqueName
}
