package nodestatus

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

type budget struct {
	spent  bool
	refill time.Duration
}

func (b budget) Saturated() (bool, time.Duration) { return b.spent, b.refill }

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		opts                 Options
		wantDelay, wantAgain time.Duration
	}{
		{"default: written at once", Options{}, 0, 0},
		{"budget left: written at once", Options{Budget: budget{}}, 0, 0},
		{"budget spent: waits, looks again when a token comes", Options{Budget: budget{spent: true, refill: 20 * time.Millisecond}}, SaturatedDelay, 20 * time.Millisecond},
		{"budget spent, token now: looks again in a millisecond", Options{Budget: budget{spent: true}}, SaturatedDelay, time.Millisecond},
		{"configured delay wins", Options{MaxDelay: 3 * time.Second, Budget: budget{spent: true}}, 3 * time.Second, 3 * time.Second},
		{"attaches backlogged: waits, looked at again by the node's attaches", Options{Budget: budget{}, Backlogged: func() bool { return true }}, SaturatedDelay, SaturatedDelay},
		{"no attach backlog: written at once", Options{Budget: budget{}, Backlogged: func() bool { return false }}, 0, 0},
		{"attaches backlogged, budget spent: looks again when a token comes", Options{Budget: budget{spent: true, refill: 5 * time.Millisecond}, Backlogged: func() bool { return true }}, SaturatedDelay, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delay, again := New(tc.opts).delay()
			if delay != tc.wantDelay || again != tc.wantAgain {
				t.Errorf("delay() = %s, %s; want %s, %s", delay, again, tc.wantDelay, tc.wantAgain)
			}
		})
	}
}

// A node's lock excludes the node's other users and no other node's; it is gone once its
// last user unlocks, so the locks do not grow with the cluster.
func TestLocks(t *testing.T) {
	var l Locks
	unlock1 := l.Lock("n1")
	if !l.Held("n1") || l.Held("n2") {
		t.Fatalf("Held(n1), Held(n2) = %t, %t with n1 locked; want true, false", l.Held("n1"), l.Held("n2"))
	}
	unlock2 := l.Lock("n2") // another node's lock does not wait for n1's

	second := make(chan func())
	go func() { second <- l.Lock("n1") }()
	// The second user of n1 is counted as soon as it waits; it gets the lock only once the
	// first unlocks.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, eventually, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.nodes["n1"].users == 2, nil
	}); err != nil {
		t.Fatal("the second Lock of n1 never waited")
	}
	select {
	case <-second:
		t.Fatal("n1 was locked twice at once")
	default:
	}
	unlock1()
	unlock3 := waitFor(t, "n1's second lock", second)
	if !l.Held("n1") {
		t.Error("n1 is free while its second user holds it")
	}
	unlock3()
	unlock2()
	if n := l.users(); n != 0 || l.Held("n1") || l.Held("n2") {
		t.Errorf("after every unlock: %d node locks kept, Held(n1)=%t, Held(n2)=%t; want none", n, l.Held("n1"), l.Held("n2"))
	}

	defer func() {
		if recover() == nil {
			t.Error("a second call of an unlock did not panic")
		}
	}()
	unlock1()
}

// A generous bound for something that happens at once: a safety net against a hang, not a
// timing assertion.
const eventually = 30 * time.Second

const testDriver = "disk.csi.example.com"

func csiVolume(handle string) v1.AttachedVolume {
	return v1.AttachedVolume{Name: v1.UniqueVolumeName(migration.CSIUniqueName(testDriver, handle))}
}

// vaStore is memory's view of the VolumeAttachment informer.
type vaStore struct {
	mu  sync.Mutex
	vas map[string]*storagev1.VolumeAttachment
}

func (s *vaStore) VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	va, ok := s.vas[name]
	return va, ok
}

func (s *vaStore) VolumeAttachmentsOnNode(node string) []*storagev1.VolumeAttachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*storagev1.VolumeAttachment
	for _, va := range s.vas {
		if va.Spec.NodeName == node {
			out = append(out, va)
		}
	}
	return out
}

func (s *vaStore) NodeKnown(string) bool { return true }

type noPVs struct{}

func (noPVs) PVCSIIdentity(string) (string, string, bool) { return "", "", false }

// fixture is an Updater over a Node lister, a VolumeAttachment store and two fake
// clientsets, as in adc: reads (the proofs of removals) go through one, status patches
// through the other. A fake clientset serializes its calls, so a read blocked in a reactor
// would otherwise block every patch too.
type fixture struct {
	u      *Updater
	mem    *attachstate.State
	nodes  cache.Indexer
	store  *vaStore
	reads  *fake.Clientset
	writes *fake.Clientset
}

func newFixture(t *testing.T, nodes ...*v1.Node) *fixture {
	t.Helper()
	f := &fixture{
		nodes:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		store:  &vaStore{vas: map[string]*storagev1.VolumeAttachment{}},
		reads:  fake.NewClientset(),
		writes: fake.NewClientset(),
	}
	for _, n := range nodes {
		f.setNode(t, n)
		if _, err := f.writes.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.mem = attachstate.New(attachstate.Options{Store: f.store, Clock: clock.RealClock{}})
	f.u = New(Options{
		Nodes:  corelisters.NewNodeLister(f.nodes),
		Memory: f.mem,
		PVs:    noPVs{},
		Client: f.reads,
		Writer: &volumeattach.ClientStatusWriter{Client: f.writes},
		Clock:  clock.RealClock{},
		Wake:   func(string) {},
	})
	return f
}

func managedNode(name string, listed ...v1.AttachedVolume) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
		Status:     v1.NodeStatus{VolumesAttached: listed},
	}
}

// setNode puts a node into the Node informer's cache.
func (f *fixture) setNode(t *testing.T, n *v1.Node) {
	t.Helper()
	if err := f.nodes.Update(n); err != nil {
		t.Fatal(err)
	}
}

// attached puts an attached VolumeAttachment of an inline CSI volume into the store.
func (f *fixture) attached(node, handle string) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	name := migration.VolumeAttachmentName(handle, testDriver, node)
	f.store.vas[name] = &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: testDriver,
			NodeName: node,
			Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}},
			}},
		},
		Status: storagev1.VolumeAttachmentStatus{Attached: true},
	}
}

// listed is the node's status.volumesAttached as the API server has it.
func (f *fixture) listed(t *testing.T, node string) []v1.AttachedVolume {
	t.Helper()
	n, err := f.writes.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Status.VolumesAttached
}

// blockedRead makes the first VolumeAttachment read of the reads client wait until release
// is closed (the test's cleanup closes it too), telling entered when it has started: a
// throttled or slow read. Later reads go through at once.
func (f *fixture) blockedRead(t *testing.T) (entered <-chan string, release func()) {
	in := make(chan string, 1)
	out := make(chan struct{})
	var once, first sync.Once
	release = func() { once.Do(func() { close(out) }) }
	t.Cleanup(release)
	f.reads.PrependReactor("get", "volumeattachments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		first.Do(func() {
			in <- a.(k8stesting.GetAction).GetName()
			<-out
		})
		return false, nil, nil
	})
	return in, release
}

type syncResult struct {
	retryAfter time.Duration
	err        error
}

// goSync runs Sync of node on its own goroutine.
func (f *fixture) goSync(node string) <-chan syncResult {
	done := make(chan syncResult, 1)
	go func() {
		retry, err := f.u.Sync(context.Background(), node)
		done <- syncResult{retry, err}
	}()
	return done
}

func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(eventually):
		t.Fatalf("%s: nothing after %s", what, eventually)
		panic("unreachable")
	}
}

// completes polls, with a generous bound, until done has a result.
func completes[T any](t *testing.T, done <-chan T) (T, bool) {
	t.Helper()
	var v T
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, eventually, true, func(context.Context) (bool, error) {
		select {
		case v = <-done:
			return true, nil
		default:
			return false, nil
		}
	})
	return v, err == nil
}

// sameStripeBefore returns a node name that shared a lock stripe with node when the status
// locks were 1024 stripes picked by FNV-1a of the name.
func sameStripeBefore(node string) string {
	stripe := func(s string) uint32 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(s))
		return h.Sum32() % 1024
	}
	for i := 0; ; i++ {
		if other := fmt.Sprintf("node-b-%d", i); stripe(other) == stripe(node) {
			return other
		}
	}
}

func sameNames(t *testing.T, what string, got []v1.AttachedVolume, want ...v1.AttachedVolume) {
	t.Helper()
	if !volumeattach.SameVolumes(got, want) || len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// Node A's status sync is stuck on a read that proves a removal (a throttled client). Node
// B's status sync (B shared A's lock stripe before) and a detach decision of A (which takes
// A's lock) must not wait for it; A's write then goes through.
func TestSyncReadHoldsNoLock(t *testing.T) {
	const a = "node-a"
	b := sameStripeBefore(a)
	gone, onB := csiVolume("gone"), csiVolume("on-b")
	f := newFixture(t, managedNode(a, gone), managedNode(b))
	f.attached(b, "on-b")
	entered, release := f.blockedRead(t)

	syncA := f.goSync(a)
	if got, want := waitFor(t, "node A's proof read", entered), migration.VolumeAttachmentName("gone", testDriver, a); got != want {
		t.Fatalf("node A read VolumeAttachment %s, want %s", got, want)
	}

	res, ok := completes(t, f.goSync(b))
	if !ok {
		t.Fatalf("node B's status sync did not complete while node A's status read was stuck")
	}
	if res.err != nil || res.retryAfter != 0 {
		t.Fatalf("node B's Sync = %s, %v; want 0, nil", res.retryAfter, res.err)
	}
	sameNames(t, "node B's status", f.listed(t, b), onB)

	locked := make(chan func(), 1)
	go func() { locked <- f.u.Locks().Lock(a) }()
	unlock, ok := completes(t, locked)
	if !ok {
		t.Fatalf("node A's lock (a detach decision) waited for node A's status read")
	}
	unlock()

	release()
	res = waitFor(t, "node A's status sync", syncA)
	if res.err != nil || res.retryAfter != 0 {
		t.Fatalf("node A's Sync = %s, %v; want 0, nil", res.retryAfter, res.err)
	}
	sameNames(t, "node A's status", f.listed(t, a))
}

// A detach decision made while a status sync reads its proofs (the decision's fresh read
// shows the volume unlisted, and it marks the volume detaching) is seen by the write: the
// volume is not listed again.
func TestSyncSeesDetachDecidedDuringRead(t *testing.T) {
	const a = "node-a"
	gone, detached := csiVolume("gone"), csiVolume("detached")
	f := newFixture(t, managedNode(a, gone))
	f.attached(a, "detached") // attached, not listed yet: the write would list it
	entered, release := f.blockedRead(t)

	syncA := f.goSync(a)
	waitFor(t, "node A's proof read", entered)

	decided := make(chan struct{})
	go func() {
		defer close(decided)
		unlock := f.u.Locks().Lock(a)
		defer unlock()
		// The detach's fresh read shows the volume unlisted: it decides to detach.
		f.mem.MarkDetaching(a, string(detached.Name))
	}()
	if _, ok := completes(t, decided); !ok {
		t.Fatalf("the detach decision waited for node A's status read")
	}

	release()
	if res := waitFor(t, "node A's status sync", syncA); res.err != nil {
		t.Fatalf("Sync: %v", res.err)
	}
	sameNames(t, "node A's status", f.listed(t, a))
}

// A removal that comes up while the others are read has no proof at the write: it stays
// listed, and the node is looked at again, which reads it.
func TestSyncKeepsRemovalUnreadAtWrite(t *testing.T) {
	const a = "node-a"
	gone, late := csiVolume("gone"), csiVolume("late")
	f := newFixture(t, managedNode(a, gone))
	entered, release := f.blockedRead(t)

	syncA := f.goSync(a)
	waitFor(t, "node A's proof read", entered)
	// Meanwhile the Node informer shows another volume listed, attached by nothing adc knows.
	f.setNode(t, managedNode(a, gone, late))
	release()
	res := waitFor(t, "node A's status sync", syncA)
	if res.err != nil || res.retryAfter <= 0 {
		t.Fatalf("Sync = %s, %v; want a retry, nil", res.retryAfter, res.err)
	}
	sameNames(t, "node A's status", f.listed(t, a), late)

	if retry, err := f.u.Sync(context.Background(), a); err != nil || retry != 0 {
		t.Fatalf("Sync again = %s, %v; want 0, nil", retry, err)
	}
	sameNames(t, "node A's status", f.listed(t, a))
}
