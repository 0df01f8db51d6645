package attachstate

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/migration-aware/adc/pkg/migration"
)

// Expectations bridge the time between a VolumeAttachment write and the moment the informer
// shows it. They are tied to the object's observed lifecycle, never to a clock alone:
//
//   - a create expectation carries the object the API server stored (UID, resourceVersion). It
//     ends when the informer shows that object (or its deletion), or when the informer's store
//     has synced past the object's resourceVersion without holding it: then the object was
//     created and deleted while the watch was away (a gap, a relist after 410 Gone), and no
//     event will ever say so.
//   - a delete request is keyed by UID and recorded before the Delete call, so an informer
//     delete event that arrives before the call returns ends it, and a VolumeAttachment
//     re-created under the same name is a new object, never "deleting".
//   - a ReadWriteOnce reservation lives only as long as the create expectation it guards.

// ExpectCreate records a create about to be sent, of the VolumeAttachment of volume (its
// unique name).
func (m *State) ExpectCreate(va *storagev1.VolumeAttachment, volume string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expected.add(&expectedVA{va: va, volume: volume, since: now})
}

// Created records what the API server stored for an expected create. When the informer
// store already holds that very object, the create is observed now (observeLocked), so the
// expectation ends with the object in the sources whether or not the handler has run.
func (m *State) Created(stored *storagev1.VolumeAttachment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.expected.get(stored.Name)
	if e == nil || e.stored {
		return
	}
	e.va, e.stored = stored, true
	if va, ok := m.opts.Store.VolumeAttachment(stored.Name); ok && va.UID == stored.UID {
		m.observeLocked(va)
	}
}

// CreateFailed forgets a create the API server refused and the reservation made for it, and
// returns the nodes that waited for that reservation: they may attach the volume now.
func (m *State) CreateFailed(va *storagev1.VolumeAttachment, volume string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expected.remove(va.Name)
	if m.releaseLocked(volume, va.Spec.NodeName) {
		return m.takeWaitersLocked(volume)
	}
	return nil
}

// CreateUncertain keeps the expectation of a create whose answer did not say whether the
// object was stored (a timeout, a lost connection): the checker reads the object and tells
// ResolveUncertain.
func (m *State) CreateUncertain(va *storagev1.VolumeAttachment, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.expected.get(va.Name); e != nil && !e.stored {
		e.uncertain, e.since = true, now
	}
}

// ResolveUncertain takes what the API server holds under an uncertain create's name (nil:
// nothing): the object adc sent, so the expectation goes on as any stored one, or not, so it
// ends with its reservation. It returns the nodes to wake (the waiters and the create's own
// node) when it ended.
func (m *State) ResolveUncertain(name string, found *storagev1.VolumeAttachment) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.expected.get(name)
	if cur == nil || cur.stored || !cur.uncertain {
		return nil
	}
	if found != nil && found.Spec.NodeName == cur.va.Spec.NodeName {
		cur.va, cur.stored, cur.uncertain = found, true, false
		return nil
	}
	m.dropExpectationLocked(cur)
	return append(m.takeWaitersLocked(cur.volume), cur.va.Spec.NodeName)
}

// RequestDelete records a delete about to be sent, before it is sent: the informer's delete
// event may come before the call returns.
func (m *State) RequestDelete(va *storagev1.VolumeAttachment, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deletes[va.Name] = deleteRequest{uid: va.UID, at: now}
}

// CancelDelete forgets a delete that failed.
func (m *State) CancelDelete(va *storagev1.VolumeAttachment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.deletes[va.Name]; ok && r.uid == va.UID {
		delete(m.deletes, va.Name)
	}
}

// DeleteRequested reports whether adc sent the delete of this very object.
func (m *State) DeleteRequested(va *storagev1.VolumeAttachment) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteRequestedLocked(va)
}

func (m *State) deleteRequestedLocked(va *storagev1.VolumeAttachment) bool {
	r, ok := m.deletes[va.Name]
	return ok && va.UID != "" && r.uid == va.UID
}

// Observed is told by the VolumeAttachment handler that the informer shows va. It reports
// whether the object is the one adc created and was waiting to see (its create returned with
// this UID).
func (m *State) Observed(va *storagev1.VolumeAttachment) (created bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.observeLocked(va)
}

// observeLocked records evidence that va exists: the informer's handler delivered it, or the
// informer's store holds it (client-go updates the store before it calls the handlers). In
// one step the object enters the sources and the create expectation of that very object
// (same UID) ends, so the ReadWriteOnce check always finds it in one of the two. An
// expectation of another object under the name ends only when va is newer than it (a
// replacement); an older object, or one seen before adc's create returned, leaves it pending.
func (m *State) observeLocked(va *storagev1.VolumeAttachment) (created bool) {
	e := m.expected.get(va.Name)
	if e != nil && e.node == va.Spec.NodeName && e.volume != "" {
		// adc's own create: filed under the volume it was decided for.
		m.sources.addAs(va, e.volume)
	} else {
		m.sources.add(va, m.opts.Volumes)
	}
	if e != nil && e.stored {
		switch {
		case e.va.UID != "" && e.va.UID == va.UID:
			created = true
			m.dropExpectationLocked(e)
		case newerThan(va, e.va):
			m.dropExpectationLocked(e)
		}
	}
	for volume, holder := range m.reservationsOfLocked(va) {
		m.releaseLocked(volume, holder)
	}
	if r, ok := m.deletes[va.Name]; ok && r.uid != va.UID {
		// A new object under the old name: the old one's delete is over.
		delete(m.deletes, va.Name)
	}
	return created
}

// newerThan reports whether a's resourceVersion is known to be later than b's.
func newerThan(a, b *storagev1.VolumeAttachment) bool {
	cmp, err := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
	return err == nil && cmp > 0
}

// Gone is told by the VolumeAttachment handler that the informer shows va deleted (a
// tombstone may have no UID: it ends what is under the name). It returns the nodes that
// waited for that volume to leave its node.
func (m *State) Gone(va *storagev1.VolumeAttachment) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	volume := m.sources.remove(va)
	if r, ok := m.deletes[va.Name]; ok && (r.uid == va.UID || va.UID == "") {
		delete(m.deletes, va.Name)
	}
	if e := m.expected.get(va.Name); e != nil {
		if volume == "" {
			volume = e.volume
		}
		if e.stored && (e.va.UID == va.UID || va.UID == "") {
			m.dropExpectationLocked(e)
		}
	}
	if volume != "" {
		m.pruneDetachVolumeLocked(volume)
		return m.takeWaitersLocked(volume)
	}
	// An object whose volume was never named: what memory keeps for the volume its name
	// proves it attached ends as for a named one.
	var wake []string
	for _, waited := range sortedKeys(m.waiters) {
		if migration.VolumeAttachmentIsFor(va, waited) {
			wake = append(wake, m.takeWaitersLocked(waited)...)
		}
	}
	for _, noted := range sortedKeys(m.detachVolumes) {
		if migration.VolumeAttachmentIsFor(va, noted) {
			m.pruneDetachVolumeLocked(noted)
		}
	}
	return wake
}

// dropExpectationLocked ends a create expectation and the reservation it guarded.
func (m *State) dropExpectationLocked(e *expectedVA) {
	m.expected.remove(e.va.Name)
	m.releaseLocked(e.volume, e.va.Spec.NodeName)
}

// reservationsOfLocked returns the reservations (volume -> node) that va, on its node, now
// holds in their place: the reservation of its volume for its node.
func (m *State) reservationsOfLocked(va *storagev1.VolumeAttachment) map[string]string {
	node := va.Spec.NodeName
	if volume, ok := m.sources.volumeOf[va.Name]; ok {
		if m.reservations[volume] == node {
			return map[string]string{volume: node}
		}
		return nil
	}
	var out map[string]string
	for volume, holder := range m.reservations {
		if holder == node && m.sources.isOf(va.Name, volume) {
			if out == nil {
				out = map[string]string{}
			}
			out[volume] = holder
		}
	}
	return out
}

// Expectation is a copy of one pending create expectation, for the expectation checker.
type Expectation struct {
	// VA is the object as sent, or as stored once the create returned (Stored).
	VA *storagev1.VolumeAttachment
	// Stored: the create returned; Uncertain: its answer was lost and the object must be read.
	Stored, Uncertain bool
	// Since is when the create was sent (or found uncertain); Verified when a GET last
	// confirmed it.
	Since, Verified time.Time
}

// CheckerWork returns what the expectation checker has to judge: the stored and the uncertain
// create expectations (in name order) and the names of the deletes sent.
func (m *State) CheckerWork() (stored, uncertain []Expectation, deletes []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range sortedKeys(m.expected.byName) {
		e := m.expected.byName[name]
		x := Expectation{VA: e.va, Stored: e.stored, Uncertain: e.uncertain, Since: e.since, Verified: e.verified}
		switch {
		case e.stored:
			stored = append(stored, x)
		case e.uncertain:
			uncertain = append(uncertain, x)
		}
	}
	deletes = sortedKeys(m.deletes)
	return stored, uncertain, deletes
}

// ObserveFromStore ends the stored expectation of the object (name, uid) if the store holds
// that very object: it is observed from the store, its handler may not have run. It never
// ends the expectation without the object in the sources.
func (m *State) ObserveFromStore(name string, uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.expected.get(name)
	if cur == nil || !cur.stored || cur.va.UID != uid {
		return
	}
	if va, ok := m.opts.Store.VolumeAttachment(name); ok && va.UID == uid {
		m.observeLocked(va)
	}
}

// ExpectationGone ends the stored expectation of the object (name, uid), which the checker
// proved deleted (or replaced) while the informer did not show it. It returns whether it
// ended, and the nodes to wake (the waiters and the create's own node).
func (m *State) ExpectationGone(name string, uid types.UID) (ended bool, wake []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.expected.get(name)
	if cur == nil || !cur.stored || cur.va.UID != uid {
		return false, nil
	}
	m.dropExpectationLocked(cur)
	return true, append(m.takeWaitersLocked(cur.volume), cur.va.Spec.NodeName)
}

// ExpectationVerified records that a GET confirmed the expectation's object, in the fallback
// for a store without a resourceVersion.
func (m *State) ExpectationVerified(name string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.expected.get(name); cur != nil {
		cur.verified = now
	}
}

// PruneDeleteRequest forgets a delete request once neither the store nor a create
// expectation holds the object it was for: nothing can be judged by it any more.
func (m *State) PruneDeleteRequest(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.deletes[name]
	if !ok {
		return
	}
	if va, inStore := m.opts.Store.VolumeAttachment(name); inStore && va.UID == r.uid {
		return
	}
	if e := m.expected.get(name); e != nil && e.stored && e.va.UID == r.uid {
		return
	}
	delete(m.deletes, name)
}
