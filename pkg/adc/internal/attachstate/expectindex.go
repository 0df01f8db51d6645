package attachstate

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// expectedVA is a VolumeAttachment adc created (or is creating) that the informer has not
// shown yet.
type expectedVA struct {
	// va is the object as sent until the create returns, then as stored.
	va *storagev1.VolumeAttachment
	// stored is set once the create returned: va has its UID and resourceVersion.
	stored bool
	since  time.Time
	// verified is when the expectation was last confirmed by a GET, in the fallback used when
	// the informer store does not expose its resourceVersion.
	verified time.Time
	// uncertain: the create failed in a way that does not say whether the object was stored
	// (a timeout); the checker reads it.
	uncertain bool
	// node and volume are the object's node and volume unique name (the index's keys).
	node, volume string
}

// deleteRequest is a VolumeAttachment delete adc sent.
type deleteRequest struct {
	uid types.UID
	at  time.Time
}

// expectations are the pending creates, indexed by name, node and volume. During an
// attach storm on a large cluster the informer lags and thousands are pending at once; every
// reconcile asks "what is expected on this node" and every ReadWriteOnce attach "is this
// volume expected elsewhere", so both are map lookups rather than scans.
type expectations struct {
	byName   map[string]*expectedVA
	byNode   map[string]map[string]*expectedVA
	byVolume map[string]map[string]*expectedVA
}

func newExpectations() expectations {
	return expectations{
		byName:   map[string]*expectedVA{},
		byNode:   map[string]map[string]*expectedVA{},
		byVolume: map[string]map[string]*expectedVA{},
	}
}

// get returns the expectation of the named VolumeAttachment, or nil.
func (x *expectations) get(name string) *expectedVA { return x.byName[name] }

// add records e under its object's name, replacing an earlier one of that name; e.volume is
// set by the caller.
func (x *expectations) add(e *expectedVA) {
	x.remove(e.va.Name)
	e.node = e.va.Spec.NodeName
	x.byName[e.va.Name] = e
	addTo(x.byNode, e.node, e.va.Name, e)
	if e.volume != "" {
		addTo(x.byVolume, e.volume, e.va.Name, e)
	}
}

// remove forgets the named VolumeAttachment's expectation, if any.
func (x *expectations) remove(name string) {
	e := x.byName[name]
	if e == nil {
		return
	}
	delete(x.byName, name)
	removeFrom(x.byNode, e.node, name)
	if e.volume != "" {
		removeFrom(x.byVolume, e.volume, name)
	}
}

func addTo(m map[string]map[string]*expectedVA, key, name string, e *expectedVA) {
	inner := m[key]
	if inner == nil {
		inner = map[string]*expectedVA{}
		m[key] = inner
	}
	inner[name] = e
}

func removeFrom(m map[string]map[string]*expectedVA, key, name string) {
	if inner := m[key]; inner != nil {
		delete(inner, name)
		if len(inner) == 0 {
			delete(m, key)
		}
	}
}
