package adc

import (
	"context"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/expectcheck"
	"github.com/migration-aware/adc/pkg/adc/internal/report"
)

// expectationController is a controller with only what the expectation code touches: its
// memory, a VolumeAttachment store the test fills and bookmarks, and a node queue.
func expectationController(t *testing.T, objs ...*storagev1.VolumeAttachment) (*Controller, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	client := fake.NewClientset()
	for _, va := range objs {
		if err := store.Add(va); err != nil {
			t.Fatal(err)
		}
		if _, err := client.StorageV1().VolumeAttachments().Create(context.Background(), va, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := DefaultOptions()
	opts.Clock = clk
	c := &Controller{
		client: client, opts: opts, vas: store, ops: report.NewOperations(1, nil, clk),
		nodeQueue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	c.mem = attachstate.New(attachstate.Options{Store: stores{c}, Clock: clk, NewBackOff: c.newBackoff})
	c.expectations = expectcheck.New(expectcheck.Options{Memory: c.mem, Store: stores{c}, Client: client, Clock: clk,
		Abort: c.ops.Abort, Wake: c.enqueueNode})
	t.Cleanup(c.nodeQueue.ShutDown)
	return c, clk
}

// testVolume is the volume the tests' VolumeAttachments of pv1 attach.
const testVolume = "kubernetes.io/csi/d^h1"

func testVA(name, node, pv, uid, rv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
	}
}

// A VolumeAttachment created and deleted while the watch was away: once the store has
// relisted past it, the expectation, the ReadWriteOnce reservation and the waiting node's
// wait all end.
func TestCheckExpectationsReleasesReservationAfterRelist(t *testing.T) {
	c, clk := expectationController(t)
	va := testVA("csi-a", "n1", "pv1", "", "")
	if other := c.mem.Reserve("n1", attachstate.Volume{Name: testVolume}); other != "" {
		t.Fatalf("a free volume is held by %q", other)
	}
	c.mem.ExpectCreate(va, testVolume, clk.Now())
	if other := c.mem.Reserve("n2", attachstate.Volume{Name: testVolume}); other != "n1" {
		t.Fatalf("n2 found the volume held by %q, want n1", other)
	}
	c.mem.Created(testVA("csi-a", "n1", "pv1", "uid-1", "100"))
	_, ctx := ktesting.NewTestContext(t)

	c.vas.Bookmark("99")
	c.expectations.Check(ctx)
	if _, ok := c.mem.Expectations()["csi-a"]; !ok || c.mem.Reserved(testVolume) != "n1" {
		t.Fatalf("expectation or reservation ended before the store reached the create")
	}

	c.vas.Bookmark("150")
	c.expectations.Check(ctx)
	if _, ok := c.mem.Expectations()["csi-a"]; ok {
		t.Errorf("expectation still pending after the store synced past it")
	}
	if holder := c.mem.Reserved(testVolume); holder != "" {
		t.Errorf("reservation still held by %q", holder)
	}
	woken := map[string]bool{}
	for c.nodeQueue.Len() > 0 {
		n, _ := c.nodeQueue.Get()
		woken[n] = true
		c.nodeQueue.Done(n)
	}
	if !woken["n1"] || !woken["n2"] {
		t.Errorf("woken nodes = %v, want n1 (its actual state changed) and n2 (it waited for the volume)", woken)
	}
}

func TestDeleteExpectationFollowsTheObject(t *testing.T) {
	old := testVA("csi-a", "n1", "pv1", "uid-1", "100")
	renewed := testVA("csi-a", "n1", "pv1", "uid-2", "130")
	for _, tc := range []struct {
		name string
		// events run after the delete request of old
		events       func(c *Controller)
		wantDeleting map[*storagev1.VolumeAttachment]bool
	}{
		{"before any event the old object is deleting, a new one is not", func(*Controller) {},
			map[*storagev1.VolumeAttachment]bool{old: true, renewed: false}},
		{"the delete event ends it", func(c *Controller) { c.mem.Gone(old) },
			map[*storagev1.VolumeAttachment]bool{old: false, renewed: false}},
		{"a delete event of another object keeps it", func(c *Controller) { c.mem.Gone(testVA("csi-a", "n1", "pv1", "uid-0", "90")) },
			map[*storagev1.VolumeAttachment]bool{old: true}},
		{"a new object under the name ends it", func(c *Controller) { c.mem.Observed(renewed) },
			map[*storagev1.VolumeAttachment]bool{old: false, renewed: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := expectationController(t)
			c.mem.RequestDelete(old, clk.Now())
			tc.events(c)
			for va, want := range tc.wantDeleting {
				got := c.mem.DeleteRequested(va)
				if got != want {
					t.Errorf("deleting(%s) = %v, want %v", va.UID, got, want)
				}
			}
		})
	}
}

// A delete event that arrives before the Delete call returns (the order a slow response
// produces) leaves nothing behind: the request was recorded before the call.
func TestDeleteEventBeforeCallReturns(t *testing.T) {
	c, clk := expectationController(t)
	va := testVA("csi-a", "n1", "pv1", "uid-1", "100")
	c.mem.RequestDelete(va, clk.Now())
	c.mem.Gone(va) // the informer, while Delete is in flight
	// Delete returns: nothing more is recorded.
	if _, _, deletes := c.mem.CheckerWork(); len(deletes) != 0 {
		t.Errorf("delete requests left: %v", deletes)
	}
}

// TestMultiAttachSeesAdcsCreateThroughout: a ReadWriteOnce volume adc is attaching to one node
// is never free for another, from the create until the VolumeAttachment is deleted: first the
// create expectation holds it, then, in the same step, the informer's copy.
func TestMultiAttachSeesAdcsCreateThroughout(t *testing.T) {
	c := newHandlerController(t)
	va := newTestVA("csi-a", "n1", "pv1")
	if other := c.mem.Reserve("n1", attachstate.Volume{Name: testVolume}); other != "" {
		t.Fatalf("a free volume is held by %q", other)
	}
	c.mem.ExpectCreate(va, testVolume, time.Now())
	c.mem.Created(va)
	check := func(step, want string) {
		t.Helper()
		if other := c.mem.Reserve("n2", attachstate.Volume{Name: testVolume}); other != want {
			t.Errorf("%s: reserving for n2 found %q, want %q", step, other, want)
		}
	}
	check("created, not shown yet", "n1")
	c.vaHandler().OnAdd(va, false)
	check("shown by the informer", "n1")
	c.vaHandler().OnDelete(va)
	check("deleted", "")
}

func newTestVA(name, node, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
}
