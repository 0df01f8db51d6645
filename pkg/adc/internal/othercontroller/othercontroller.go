// Package othercontroller notices another attach/detach controller writing what adc owns,
// and fences adc while it does: two controllers that decide differently fight (a volume one
// detaches the other re-attaches, a ReadWriteOnce volume one keeps on a node the other
// moves), and node status.volumesAttached changes owner on every write. The fence stops every
// write of adc (VolumeAttachment creates and deletes, in-tree attaches and detaches, node
// status) until no write of the other controller has been seen for a quiet period; then adc
// resumes by itself.
//
// What counts as the other controller's write is read from objects, never guessed:
//   - a change of a Node's status.volumesAttached (an atomic list, so its owner in
//     managedFields is whoever changed it last) whose owner is a kube-controller-manager;
//   - a VolumeAttachment created, after adc's caches synced, by a kube-controller-manager (the
//     manager that owns its spec).
//
// Another adc writes with adc's own field manager and cannot be told apart this way; leader
// election keeps two replicas of one Deployment from writing at once.
package othercontroller

import (
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// DefaultQuietPeriod is how long adc waits, after the last write of another attach/detach
// controller it saw, before it writes again. Long enough that a controller that writes only
// when a pod comes or goes is not mistaken for gone on an idle cluster; short enough that a
// handover that switched the other controller off a little late costs minutes, not hours.
const DefaultQuietPeriod = 2 * time.Minute

// KubeControllerManager is the field manager of kube-controller-manager's built-in
// attach/detach controller.
const KubeControllerManager = volumeattach.KubeControllerManager

// Objects a write of the other controller was seen on.
const (
	// NodeStatus is a Node's status.volumesAttached.
	NodeStatus = "Node/status.volumesAttached"
	// VolumeAttachment is a VolumeAttachment the other controller created.
	VolumeAttachment = "VolumeAttachment"
)

// Write is one write of another controller that adc saw.
type Write struct {
	// Manager is the other writer's field manager.
	Manager string
	// Object is what it wrote (NodeStatus or VolumeAttachment), Name that object's name and
	// Node the node it is about.
	Object, Name, Node string
	// Seen is when adc saw it.
	Seen time.Time
}

// String says what was written, by whom, for logs and Events.
func (w Write) String() string {
	switch w.Object {
	case NodeStatus:
		return fmt.Sprintf("field manager %q changed status.volumesAttached of node %s", w.Manager, w.Node)
	default:
		return fmt.Sprintf("field manager %q created VolumeAttachment %s for node %s", w.Manager, w.Name, w.Node)
	}
}

// State is the guard's state, for metrics, readiness, `adc status` and the dashboard.
type State struct {
	// Fenced is true while adc refuses to write.
	Fenced bool
	// Last is the last write of another controller seen (zero when none was).
	Last Write
	// Until is when the fence ends if no other write is seen (zero when not fenced).
	Until time.Time
	// Writes counts the other controllers' writes seen, by field manager and object.
	Writes map[WriteKey]int64
}

// WriteKey is a Writes counter's key.
type WriteKey struct {
	Manager, Object string
}

// Options configure a Guard.
type Options struct {
	// OwnManager is adc's field manager (volumeattach.FieldManager).
	OwnManager string
	// IsOther tells whether a field manager is another attach/detach controller's (default:
	// any kube-controller-manager's, volumeattach.IsKubeControllerManager; never OwnManager).
	// Tools and tests that write these objects with a manager of their own are not taken for
	// a controller.
	IsOther func(manager string) bool
	// QuietPeriod is how long no other write must be seen before adc writes again
	// (default DefaultQuietPeriod).
	QuietPeriod time.Duration
	// Clock is injectable for tests.
	Clock clock.PassiveClock
}

// Guard keeps what adc saw of other attach/detach controllers, behind its own lock.
type Guard struct {
	opts Options

	mu     sync.Mutex
	last   Write
	fenced bool // an episode is open (Resumed not reported yet)
	writes map[WriteKey]int64
}

// New returns a guard that has seen nothing.
func New(o Options) *Guard {
	if o.IsOther == nil {
		o.IsOther = volumeattach.IsKubeControllerManager
	}
	if o.QuietPeriod <= 0 {
		o.QuietPeriod = DefaultQuietPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Guard{opts: o, writes: map[WriteKey]int64{}}
}

// NodeUpdated checks a Node update for another controller's write of
// status.volumesAttached. It returns the write and whether it opened a fence (first write
// since adc last wrote freely): the caller says so loudly once per episode.
func (g *Guard) NodeUpdated(old, cur *v1.Node) (Write, bool, bool) {
	if old == nil || cur == nil || slices.Equal(old.Status.VolumesAttached, cur.Status.VolumesAttached) {
		return Write{}, false, false
	}
	manager := volumeattach.VolumesAttachedOwner(cur)
	if manager == "" || manager == g.opts.OwnManager || !g.opts.IsOther(manager) {
		return Write{}, false, false
	}
	opened := g.saw(Write{Manager: manager, Object: NodeStatus, Name: cur.Name, Node: cur.Name})
	return g.Last(), true, opened
}

// AttachmentAdded checks a VolumeAttachment adc's informer delivered, after its initial
// list, for one another controller created. It returns the write, whether it was one, and
// whether it opened a fence.
func (g *Guard) AttachmentAdded(va *storagev1.VolumeAttachment, inInitialList bool) (Write, bool, bool) {
	if va == nil || inInitialList {
		return Write{}, false, false
	}
	manager := volumeattach.Creator(va)
	if manager == "" || manager == g.opts.OwnManager || !g.opts.IsOther(manager) {
		return Write{}, false, false
	}
	opened := g.saw(Write{Manager: manager, Object: VolumeAttachment, Name: va.Name, Node: va.Spec.NodeName})
	return g.Last(), true, opened
}

func (g *Guard) saw(w Write) (opened bool) {
	w.Seen = g.opts.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes[WriteKey{Manager: w.Manager, Object: w.Object}]++
	opened = !g.fenced
	g.fenced = true
	g.last = w
	return opened
}

// Last returns the last write of another controller seen.
func (g *Guard) Last() Write {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// Fenced reports whether adc must not write now, and if so for how long at least.
func (g *Guard) Fenced() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fencedLocked(g.opts.Clock.Now())
}

func (g *Guard) fencedLocked(now time.Time) (time.Duration, bool) {
	if !g.fenced {
		return 0, false
	}
	left := g.last.Seen.Add(g.opts.QuietPeriod).Sub(now)
	return left, left > 0
}

// Resumed reports, once per episode, that a fence ended: the quiet period passed since the
// last write of another controller. It returns that write.
func (g *Guard) Resumed() (Write, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, fenced := g.fencedLocked(g.opts.Clock.Now()); fenced || !g.fenced {
		return Write{}, false
	}
	g.fenced = false
	return g.last, true
}

// QuietPeriod returns the quiet period the fence lasts after the last other write.
func (g *Guard) QuietPeriod() time.Duration { return g.opts.QuietPeriod }

// State returns a copy of the guard's state.
func (g *Guard) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := State{Last: g.last, Writes: make(map[WriteKey]int64, len(g.writes))}
	for k, n := range g.writes {
		s.Writes[k] = n
	}
	if left, fenced := g.fencedLocked(g.opts.Clock.Now()); fenced {
		s.Fenced, s.Until = true, g.opts.Clock.Now().Add(left)
	}
	return s
}

// The only fields of managedFields the guard reads, shared by every trimmed object (never
// changed in place).
var (
	volumesAttachedFields = metav1.NewFieldsV1(`{"f:status":{"f:volumesAttached":{}}}`)
	specFields            = metav1.NewFieldsV1(`{"f:spec":{}}`)
)

// TrimNodeManagedFields leaves a Node's managedFields with what the guard reads: one entry,
// the owner of status.volumesAttached, reduced to that field. adc's trimmed informer caches
// (cached.TrimInformerObjects) keep this much of a Node's managedFields, and nothing more.
func TrimNodeManagedFields(n *v1.Node) {
	owner := volumeattach.VolumesAttachedOwner(n)
	if owner == "" {
		n.ManagedFields = nil
		return
	}
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: intern(owner), Operation: metav1.ManagedFieldsOperationUpdate,
		Subresource: "status", FieldsType: "FieldsV1", FieldsV1: volumesAttachedFields}}
}

// CreatorManagedFields returns the managedFields a trimmed VolumeAttachment keeps: its
// creator's entry, reduced to the spec (nil when there is no creator).
func CreatorManagedFields(creator string) []metav1.ManagedFieldsEntry {
	if creator == "" {
		return nil
	}
	return []metav1.ManagedFieldsEntry{{Manager: intern(creator), Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: specFields}}
}

// intern shares the strings of the usual managers between cached objects.
func intern(manager string) string {
	switch manager {
	case KubeControllerManager:
		return KubeControllerManager
	case volumeattach.FieldManager:
		return volumeattach.FieldManager
	}
	return manager
}
