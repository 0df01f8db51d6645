package faultproxy

import (
	"sync"
	"time"
)

// fault is the state of one resource's faults.
type fault struct {
	frozen  bool
	cut     bool
	expired bool
	delay   time.Duration
	// epoch counts Cut and Expire calls: a stream opened under an older epoch is closed.
	epoch uint64
}

// faults holds every resource's fault state. One channel, closed and replaced on every
// change, wakes every waiting request and stream so each re-reads its resource's state.
type faults struct {
	mu         sync.Mutex
	byResource map[string]*fault
	changed    chan struct{}
}

func newFaults() *faults {
	return &faults{byResource: map[string]*fault{}, changed: make(chan struct{})}
}

// get returns a copy of resource's fault and a channel closed at the next change.
func (f *faults) get(resource string) (fault, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.byResource[resource]; st != nil {
		return *st, f.changed
	}
	return fault{}, f.changed
}

// update changes resource's fault under the lock and wakes every waiter.
func (f *faults) update(resource string, change func(*fault)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.byResource[resource]
	if st == nil {
		st = &fault{}
		f.byResource[resource] = st
	}
	change(st)
	close(f.changed)
	f.changed = make(chan struct{})
}

// healAll ends every fault on every resource, keeping epochs so no stream is closed.
func (f *faults) healAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, st := range f.byResource {
		*st = fault{epoch: st.epoch}
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// verdict is what to do with a collection request now.
type verdict int

const (
	pass        verdict = iota // forward it
	hold                       // wait for a change (or until the delay is over), then ask again
	unavailable                // answer 503: the resource is cut
	gone                       // answer 410: the resource is expired and this watch resumes
)

// admit decides on a list or watch of a collection that arrived at arrival. When it passes
// it returns the epoch its stream belongs to, and a relist ends the resource's expiry;
// when it holds, wait says until when (zero: until the next change).
func (f *faults) admit(t target, arrival, now time.Time) (v verdict, epoch uint64, wait time.Duration, changed <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.byResource[t.Resource]
	if st == nil {
		return pass, 0, 0, f.changed
	}
	switch {
	case st.cut:
		return unavailable, st.epoch, 0, f.changed
	case st.expired && t.resuming:
		return gone, st.epoch, 0, f.changed
	case st.frozen:
		return hold, st.epoch, 0, f.changed
	case !t.Watch && st.delay > 0 && now.Before(arrival.Add(st.delay)):
		return hold, st.epoch, arrival.Add(st.delay).Sub(now), f.changed
	}
	if st.expired && t.relist {
		st.expired = false
	}
	return pass, st.epoch, 0, f.changed
}

// Freeze makes the resource's open list and watch streams stop delivering: what they read
// from the API server is held and delivered in order on Heal, as when one informer's
// connection stalls while others flow. New lists and watches of it wait until Heal (or until
// their client gives up).
func (p *Proxy) Freeze(resource string) {
	p.faults.update(resource, func(f *fault) { f.frozen = true })
	p.logger.V(2).Info("Froze resource", "resource", resource)
}

// Cut closes the resource's open list and watch streams now, as an API server restart
// does, and answers new lists and watches of it 503 (with a Status body) until Heal, as a
// server that is not ready yet does.
func (p *Proxy) Cut(resource string) {
	p.faults.update(resource, func(f *fault) { f.cut = true; f.epoch++ })
	p.logger.V(2).Info("Cut resource", "resource", resource)
}

// Delay delivers every chunk of the resource's watch streams d after it arrived from the
// API server (in order) and answers its lists d late, until Heal, so a test can make one
// informer lag behind the others by a known amount.
func (p *Proxy) Delay(resource string, d time.Duration) {
	p.faults.update(resource, func(f *fault) { f.delay = d })
	p.logger.V(2).Info("Delayed resource", "resource", resource, "delay", d)
}

// Expire closes the resource's open watch (and list) streams, dropping any data Freeze held,
// and then answers every watch that resumes from a resourceVersion (set, not "0", without
// sendInitialEvents=true) with 410 Gone / Reason Expired until the client relists (a plain
// LIST, or a watch with sendInitialEvents=true), as kube-apiserver does when a client's
// resourceVersion has been compacted. A client-go informer then relists, after its usual
// backoff of about a second. After Freeze, the relist itself waits until Heal.
func (p *Proxy) Expire(resource string) {
	p.faults.update(resource, func(f *fault) { f.expired = true; f.epoch++ })
	p.logger.V(2).Info("Expired resource", "resource", resource)
}

// Heal ends every fault on the resource (freeze, cut, delay and a pending expiry): held data
// flows on, in order, and waiting requests go through.
func (p *Proxy) Heal(resource string) {
	p.faults.update(resource, func(f *fault) { *f = fault{epoch: f.epoch} })
	p.logger.V(2).Info("Healed resource", "resource", resource)
}

// HealAll ends every fault on every resource, for test cleanup.
func (p *Proxy) HealAll() {
	p.faults.healAll()
	p.logger.V(2).Info("Healed all resources")
}
