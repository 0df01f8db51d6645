package adc

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
)

// The tests below each pin one of the defects issue #23 found by reading the code. Each failed
// on the code before its fix; the failure it printed is in the test's comment.

// Defect 1: client-go updates the informer store before it delivers the event to the
// handlers. A create expectation proven by the store alone must not end the ReadWriteOnce
// protection while the handler, which keeps the volume's VolumeAttachments, has not run.
// Before the fix: "node n2 got VolumeAttachment [...] for ReadWriteOnce volume pv1 while n1 has one".
func TestRWOHeldWhileStoreIsAheadOfHandler(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.node("n2")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv1")
	f.syncNode("n1")
	created := f.att.createdOn("n1")
	if len(created) != 1 {
		t.Fatalf("n1 creates = %d, want 1", len(created))
	}
	// The store shows the object; its add event is still queued for the handlers.
	f.store(f.vas, created[0])
	f.vas.Bookmark(created[0].ResourceVersion)
	f.c.expectations.Check(f.ctx)

	f.pod("b", "n2", "pv1")
	f.syncNode("n2")
	if got := f.att.createdOn("n2"); len(got) != 0 {
		t.Fatalf("node n2 got VolumeAttachment %s for ReadWriteOnce volume pv1 while n1 has one", got[0].Name)
	}
}

// Defect 9: a create expectation ends only on evidence about the object adc created (its
// UID). An older object under the same name (a leftover being deleted) must not end it.
// Before the fix: "n1's actual state lost the VolumeAttachment adc created".
func TestCreateExpectationEndsOnlyOnItsUID(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv1")
	f.syncNode("n1")
	created := f.att.createdOn("n1")[0]
	old := created.DeepCopy()
	old.UID, old.ResourceVersion = "uid-old", "5"
	// The informer shows the old object, then its deletion; adc's create is not shown yet.
	f.c.vaHandler().OnAdd(old, false)
	f.c.vaHandler().OnDelete(old)
	node, _ := f.c.nodes.Get("n1")
	for _, a := range actual.Read(f.c.mem, f.c.lookups, node) {
		if a.VA != nil && a.VA.Name == created.Name {
			return
		}
	}
	t.Fatalf("n1's actual state lost the VolumeAttachment adc created (%s, %s)", created.Name, created.UID)
}

// hookedStore runs a hook after each ByIndex read: the moment another goroutine may change
// the store and run a handler.
type hookedStore struct {
	cache.Indexer
	after func()
}

func (s *hookedStore) ByIndex(index, value string) ([]interface{}, error) {
	out, err := s.Indexer.ByIndex(index, value)
	if s.after != nil {
		after := s.after
		s.after = nil
		after()
	}
	return out, err
}

// Defect 5: the actual state must see a VolumeAttachment either in the store or in the create
// expectations, even when the informer delivers it between the two reads. Memory reads the
// store under the lock its handler takes to end the expectation, so no delivery falls between
// the reads: the store read happens with the lock held (checked at the read itself, without a
// timer), and the object delivered right after it is found.
// Before the fix: "the store was read outside memory's lock".
func TestActualStateSeesVAObservedMidRead(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv1")
	f.syncNode("n1")
	created := f.att.createdOn("n1")[0]
	hooked := &hookedStore{Indexer: f.vas}
	f.c.vas = hooked
	lockedAtRead := false
	hooked.after = func() {
		lockedAtRead = f.c.mem.Busy()
		// client-go: the store first, then the handler, on its own goroutine; it runs once
		// the reader lets go of memory's lock.
		f.store(f.vas, created)
	}
	node, _ := f.c.nodes.Get("n1")
	atts := actual.Read(f.c.mem, f.c.lookups, node)
	f.c.vaHandler().OnAdd(created, false)
	if !lockedAtRead {
		t.Fatalf("the store was read outside memory's lock: a VolumeAttachment the informer delivers between the store read and the expectation read would be in neither")
	}
	for _, a := range atts {
		if a.VA != nil && a.VA.Name == created.Name {
			return
		}
	}
	t.Fatalf("the VolumeAttachment observed between the store read and the expectation read is in neither")
}

// Defect 3a: a status write may drop a volume only on evidence from the API server, not
// because the VolumeAttachment cache does not hold it (yet).
// Before the fix: "status write dropped kubernetes.io/csi/d^h1, whose VolumeAttachment exists attached".
func TestStatusKeepsVolumeMissingOnlyFromTheCache(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inAPI    bool
		wantKept bool
	}{
		{"the API server has it attached: kept", true, true},
		{"the API server has none: dropped", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.volume("pv1", "h1", v1.ReadWriteOnce)
			f.node("n1", func(n *v1.Node) {
				n.Status.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/d^h1"}}
			})
			if tc.inAPI {
				f.api(f.va("h1", "pv1", "n1", "uid-1", "10", true))
			}
			f.syncStatus("n1")
			got, wrote := f.status.lastWrite()
			kept := !wrote || slices.Contains(attachedNames(got), "kubernetes.io/csi/d^h1")
			if kept != tc.wantKept {
				t.Fatalf("status writes %v (wrote %v): kept = %v, want %v", attachedNames(got), wrote, kept, tc.wantKept)
			}
		})
	}
}

// Defect 3b: a VolumeAttachment whose PersistentVolume is gone still leaves node status
// before it is deleted.
// Before the fix: "deleted csi-... while node status still listed kubernetes.io/csi/d^h1".
func TestPVLessVolumeLeavesStatusBeforeDelete(t *testing.T) {
	f := newFixture(t, Options{})
	unique := "kubernetes.io/csi/d^h1"
	f.node("n1", func(n *v1.Node) { n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique)}} })
	va := f.va("h1", "pv-gone", "n1", "uid-1", "10", true)
	f.api(va)
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)

	for i := 0; i < 3; i++ {
		f.syncNode("n1")
		apiNode, err := f.client.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.att.deleted()) > 0 {
			if listed(apiNode, unique) {
				t.Fatalf("deleted %v while node status still listed %s", f.att.deleted(), unique)
			}
			return
		}
		f.syncStatus("n1")
		f.store(f.nodes, apiNode) // the Node informer catches up
	}
	t.Fatalf("the VolumeAttachment of the deleted PersistentVolume was never detached; status writes %v", f.status.writes)
}

// Issue 41, defect 3: a VolumeAttachment no pod uses, whose PersistentVolume is gone, is
// named by its own name (the kubelet's convention derives it from handle, driver and node),
// so it is detached once the kubelet stops reporting its volume in use, even while another
// volume of its driver is in use on the node, and whether or not node status still lists it.
// Before the fix: "deleted [] ... want only csi-...": it was kept for as long as any volume
// of the driver was mounted, and nothing said why.
func TestPVLessVolumeDetachedWhileAnotherOfItsDriverIsInUse(t *testing.T) {
	h1, h2 := "kubernetes.io/csi/d^h1", "kubernetes.io/csi/d^h2"
	for _, tc := range []struct {
		name   string
		listed []v1.AttachedVolume
	}{
		{"node status still lists it", []v1.AttachedVolume{{Name: v1.UniqueVolumeName(h1)}, {Name: v1.UniqueVolumeName(h2)}}},
		{"node status dropped it already", []v1.AttachedVolume{{Name: v1.UniqueVolumeName(h2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.node("n1", func(n *v1.Node) {
				n.Status.VolumesAttached = tc.listed
				n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(h2)}
			})
			f.volume("v2", "h2", v1.ReadWriteOnce)
			f.pod("p2", "n1", "v2")
			gone := f.va("h1", "v1", "n1", "uid-1", "10", true)
			kept := f.va("h2", "v2", "n1", "uid-2", "11", true)
			f.api(gone, kept)
			f.store(f.vas, gone, kept)
			f.c.vaHandler().OnAdd(gone, false)
			f.c.vaHandler().OnAdd(kept, false)

			f.settleNode("n1", 3)
			if got := f.att.deleted(); len(got) != 1 || got[0] != gone.Name {
				t.Fatalf("deleted %v, want only %s (its PersistentVolume is gone and the kubelet does not use it)", got, gone.Name)
			}
		})
	}
}

// The same VolumeAttachment while the kubelet still reports its volume in use is kept: its
// own name finds the in-use entry.
func TestPVLessVolumeInUseIsKept(t *testing.T) {
	f := newFixture(t, Options{})
	h1 := "kubernetes.io/csi/d^h1"
	f.node("n1", func(n *v1.Node) {
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(h1)}
	})
	gone := f.va("h1", "v1", "n1", "uid-1", "10", true)
	f.api(gone)
	f.store(f.vas, gone)
	f.c.vaHandler().OnAdd(gone, false)
	f.settleNode("n1", 3)
	if got := f.att.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while the kubelet reported its volume in use", got)
	}
}

// Defect 6: the Event memory is bounded by live pods and nodes: a deleted pod's entries go
// with it.
// Before the fix: "1 Event memory entries left after the pod was deleted".
func TestEventMemoryForgetsDeletedPods(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	// A claim that is not bound: the pair waits, with a WaitingForVolumeBinding Event.
	p := f.pod("a", "n1", "pv-unbound")
	f.syncNode("n1")
	if n := eventMemoryLen(f.c); n == 0 {
		t.Fatalf("the held pair left no Event memory; the test does not test anything")
	}
	f.deletePod(p)
	f.syncNode("n1")
	if n := eventMemoryLen(f.c); n != 0 {
		t.Fatalf("%d Event memory entries left after the pod was deleted", n)
	}
	if n := heldMemoryLen(f.c); n != 0 {
		t.Fatalf("%d held pairs left after the pod was deleted", n)
	}
}

// Defect 7: a slow VolumeAttachment delete does not hold the node's status lock: status
// writes of the node go on meanwhile.
// Before the fix: "the status sync of n1 waited for the VolumeAttachment delete".
func TestStatusWriteNotBlockedBySlowDelete(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	va := f.va("h1", "pv1", "n1", "uid-1", "10", true)
	f.api(va)
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)
	// Nothing uses pv1 and node status does not list it: the next reconcile deletes it.
	f.att.deleteEntered, f.att.deleteRelease = make(chan string, 1), make(chan struct{})
	syncDone := make(chan struct{})
	go func() { f.syncNode("n1"); close(syncDone) }()
	<-f.att.deleteEntered

	statusDone := make(chan struct{})
	go func() { f.syncStatus("n1"); close(statusDone) }()
	blocked := false
	select {
	case <-statusDone:
	case <-time.After(5 * time.Second): // a deadlock detector, not a budget
		blocked = true
	}
	close(f.att.deleteRelease)
	<-syncDone
	<-statusDone
	if blocked {
		t.Fatalf("the status sync of n1 waited for the VolumeAttachment delete")
	}
}

// Defect 8: the VolumeAttachments of a deleted node adc never managed belong to whoever
// managed it (the kubelet); adc leaves them alone. Those of a node it managed are detached.
// Before the fix: "deleted [csi-...] of node n9, which adc never managed".
func TestGoneNodeDetachesOnlyWhatADCManaged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		managed bool
		// unseen: the node was deleted before adc saw it (a leader failover); creator is the
		// field manager that created the VolumeAttachment.
		unseen     bool
		creator    string
		wantDelete bool
	}{
		{name: "never managed: left to its owner", creator: "kubelet"},
		{name: "managed until deleted: detached", managed: true, creator: "adc", wantDelete: true},
		{name: "deleted before adc saw it, created by adc: detached", unseen: true, creator: "adc", wantDelete: true},
		{name: "deleted before adc saw it, created by kube-controller-manager: detached", unseen: true, creator: "kube-controller-manager", wantDelete: true},
		{name: "deleted before adc saw it, created by the kubelet: left to it", unseen: true, creator: "kubelet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			n := f.node("n9", func(n *v1.Node) {
				if !tc.managed {
					delete(n.Annotations, "volumes.kubernetes.io/controller-managed-attach-detach")
				}
			})
			if !tc.unseen {
				f.c.nodeHandler().OnAdd(n, false)
				f.syncNode("n9")
			}
			va := f.va("h1", "pv1", "n9", "uid-1", "10", true)
			va.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: tc.creator, Operation: metav1.ManagedFieldsOperationUpdate}}
			f.api(va)
			va = va.DeepCopy()
			va.ManagedFields = nil // adc's cache keeps none
			f.store(f.vas, va)
			f.c.vaHandler().OnAdd(va, false)
			// The node goes away.
			if err := f.nodes.Delete(n); err != nil {
				t.Fatal(err)
			}
			if err := f.client.CoreV1().Nodes().Delete(f.ctx, "n9", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if !tc.unseen {
				f.c.nodeHandler().OnDelete(n)
			}
			f.syncNode("n9")
			deleted := len(f.att.deleted()) > 0
			if deleted != tc.wantDelete {
				t.Fatalf("deleted %v of node n9 (managed: %v), want a delete: %v", f.att.deleted(), tc.managed, tc.wantDelete)
			}
		})
	}
}

// fakeInTree is an InTreeAttacher whose VolumesAreAttached answers from a map.
type fakeInTree struct {
	attached map[string]bool
	asked    int
}

func (f *fakeInTree) Attach(_ context.Context, v InTreeVolume, _ string) (string, error) {
	f.attached[v.UniqueName] = true
	return "/dev/x", nil
}

func (f *fakeInTree) Detach(_ context.Context, v InTreeVolume, _ string) error {
	delete(f.attached, v.UniqueName)
	return nil
}

func (f *fakeInTree) VolumesAreAttached(_ context.Context, vols []InTreeVolume, _ string) (map[string]bool, error) {
	f.asked++
	out := map[string]bool{}
	for _, v := range vols {
		out[v.UniqueName] = f.attached[v.UniqueName]
	}
	return out, nil
}

var _ InTreeAttacher = &fakeInTree{}

// Defect 4: in-tree attachments are verified through the attacher, as kube-controller-manager
// does every reconciler sync period: one the cloud reports detached leaves adc's memory and
// node status.
// Before the fix: "VolumesAreAttached was never asked".
func TestInTreeAttachmentsVerifiedThroughTheAttacher(t *testing.T) {
	attacher := &fakeInTree{attached: map[string]bool{}}
	f := newFixture(t, Options{InTreeAttacher: attacher})
	unique := "kubernetes.io/gce-pd/disk-1"
	f.node("n1", func(n *v1.Node) {
		n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique), DevicePath: "/dev/x"}}
	})
	f.syncNode("n1")
	f.clk.Step(DefaultOptions().InTreeVerifyPeriod + time.Second)
	f.syncNode("n1")
	if attacher.asked == 0 {
		t.Fatalf("VolumesAreAttached was never asked")
	}
	f.syncStatus("n1")
	if got, wrote := f.status.lastWrite(); !wrote || slices.Contains(attachedNames(got), unique) {
		t.Fatalf("status writes %v (wrote %v): %s, which the attacher reports detached, is still listed", attachedNames(got), wrote, unique)
	}
}

// Defect 4, second half: an in-tree volume that node status lists after adc first read the
// node (another controller's write, a stale first read) is learned, so that the ReadWriteOnce
// check sees it and status does not drop it.
// Before the fix: "n2 could reserve kubernetes.io/gce-pd/disk-1, which node status of n1 lists".
func TestInTreeAttachmentListedLaterIsLearned(t *testing.T) {
	f := newFixture(t, Options{InTreeAttacher: &fakeInTree{attached: map[string]bool{}}})
	n := f.node("n1")
	f.syncNode("n1")
	unique := "kubernetes.io/gce-pd/disk-1"
	later := n.DeepCopy()
	later.ResourceVersion = "7"
	later.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique), DevicePath: "/dev/x"}}
	later.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)} // mounted: not detached
	f.store(f.nodes, later)
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx, later, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncNode("n1")
	if other := f.c.mem.Reserve("n2", attachstate.Volume{Name: unique, InTreeName: unique}); other != "n1" {
		t.Fatalf("n2 could reserve %s, which node status of n1 lists (other = %q)", unique, other)
	}
}

// Found by the chaos test: a forced detach (the node not Ready for longer than
// MaxWaitForUnmount, the kubelet still reporting the volume in use) was decided on the
// reconcile's read of the node, and the node came back before the delete was sent. The
// delete must not go: the kubelet that is back still has the volume mounted.
// Before the fix: "deleted [csi-...] although the node was Ready again".
func TestForcedDetachReconfirmedBeforeTheDelete(t *testing.T) {
	f := newFixture(t, Options{MaxWaitForUnmount: time.Minute})
	unique := "kubernetes.io/csi/d^h1"
	lost := f.node("n1", func(n *v1.Node) {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(f.clk.Now().Add(-2 * time.Minute))}}
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}
	})
	f.volume("v1", "h1", v1.ReadWriteOnce)
	va := f.va("h1", "v1", "n1", "uid-1", "10", true)
	f.api(va)
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)

	// The kubelet comes back after the reconcile's read: every later read shows it Ready.
	back := lost.DeepCopy()
	back.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clk.Now())}}
	reads := 0
	f.client.PrependReactor("get", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if reads++; reads > 1 {
			return true, back.DeepCopy(), nil
		}
		return false, nil, nil
	})
	f.syncNode("n1")
	if got := f.att.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v although the node was Ready again", got)
	}
	if reads != 2 {
		t.Fatalf("the node was read %d times, want the reconcile's read and one before the delete", reads)
	}
	detaching, _ := f.c.mem.StatusInputs("n1")
	if detaching[unique] {
		t.Errorf("%s is still marked detaching: node status would keep it unlisted while it stays attached", unique)
	}

	// Still not Ready at the second read: the forced detach goes.
	reads = 0
	back = lost.DeepCopy()
	f.syncNode("n1")
	if got := f.att.deleted(); len(got) != 1 || got[0] != va.Name {
		t.Fatalf("deleted %v, want %s once the node stays lost", got, va.Name)
	}
}
