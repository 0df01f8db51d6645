package adc

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/migration-aware/adc/pkg/adc/internal/creates"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// A node reconcile decides its creates and queues them; it does not wait for them. The
// ReadWriteOnce reservation and the create expectation are taken at the decision, so while a
// create waits in the queue no other node gets the volume and no second create is decided.
func TestReconcileQueuesCreatesWithoutSendingThem(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.node("n2")
	for _, pv := range []string{"pv1", "pv2", "pv3"} {
		f.volume(pv, "h-"+pv, v1.ReadWriteOnce)
	}
	f.pod("a", "n1", "pv1", "pv2", "pv3")
	if _, err := f.c.syncNode(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := f.att.createdOn("n1"); len(got) != 0 {
		t.Fatalf("the reconcile sent %d creates itself, want them queued", len(got))
	}
	if got := f.c.creates.Len(); got != 3 {
		t.Fatalf("create queue holds %d, want 3", got)
	}
	// A second reconcile of n1 and a pod of n2 wanting pv1 decide nothing new meanwhile.
	if _, err := f.c.syncNode(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	f.pod("b", "n2", "pv1")
	if _, err := f.c.syncNode(f.ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if got := f.c.creates.Len(); got != 3 {
		t.Fatalf("create queue holds %d after the second reconciles, want 3", got)
	}
	f.c.sendQueuedCreates(f.ctx)
	f.checkMemory("queued creates sent")
	if got := len(f.att.createdOn("n1")); got != 3 {
		t.Fatalf("n1 creates = %d, want 3", got)
	}
	if got := f.att.createdOn("n2"); len(got) != 0 {
		t.Fatalf("n2 got %s for ReadWriteOnce pv1 while n1's create was queued", got[0].Name)
	}
}

// A reconcile that no longer wants a volume whose create has no answer yet neither deletes
// by name what the create may make nor leaves the create to run: a queued create is
// withdrawn (never sent, its reservation freed for the waiting node), a create in flight is
// awaited (its answer wakes the node, which then detaches what it made).
func TestReconcileWithdrawsOrAwaitsUnansweredCreates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight bool
		// wantCreates on n1, and whether n1 is queued again once the create is answered.
		wantCreates int
		wantWake    bool
	}{
		{name: "queued: withdrawn, never sent", inFlight: false, wantCreates: 0},
		{name: "in flight: awaited, its answer wakes the node", inFlight: true, wantCreates: 1, wantWake: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.node("n1")
			f.node("n2")
			f.volume("pv1", "h1", v1.ReadWriteOnce)
			a := f.pod("a", "n1", "pv1")
			if _, err := f.c.syncNode(f.ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			sent := make(chan struct{})
			if tc.inFlight {
				f.att.createEntered, f.att.createRelease = make(chan string, 1), make(chan struct{})
				go func() { f.c.creates.ProcessNext(f.ctx); close(sent) }()
				<-f.att.createEntered
			}
			f.deletePod(a)
			if _, err := f.c.syncNode(f.ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			if got := f.att.deleted(); len(got) != 0 {
				t.Fatalf("deleted %v while its create had no answer", got)
			}
			for f.c.nodeQueue.Len() > 0 { // what the handlers queued so far
				k, _ := f.c.nodeQueue.Get()
				f.c.nodeQueue.Done(k)
			}
			if tc.inFlight {
				close(f.att.createRelease)
				<-sent
			}
			f.c.sendQueuedCreates(f.ctx)
			f.checkMemory("create answered")
			if got := len(f.att.createdOn("n1")); got != tc.wantCreates {
				t.Fatalf("n1 creates = %d, want %d", got, tc.wantCreates)
			}
			if woken := f.c.nodeQueue.Len() > 0; woken != tc.wantWake {
				t.Fatalf("n1 queued again after the answer: %v, want %v", woken, tc.wantWake)
			}
			if !tc.inFlight {
				// pv1's reservation went with the withdrawn create: n2 may attach it.
				f.pod("b", "n2", "pv1")
				f.syncNode("n2")
				if got := len(f.att.createdOn("n2")); got != 1 {
					t.Fatalf("n2 creates = %d after n1's create was withdrawn, want 1", got)
				}
			}
		})
	}
}

// A create the API server refuses ends its expectation and reservation on the create
// worker; the decision is retried by the node's reconcile.
func TestRefusedCreateFreesItsReservation(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.node("n2")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv1")
	f.att.createErr = apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, "x", nil)
	f.syncNode("n1")
	f.att.createErr = nil
	if got := len(f.att.createdOn("n1")); got != 0 {
		t.Fatalf("n1 creates = %d, want the refused one only", got)
	}
	f.pod("b", "n2", "pv1")
	f.syncNode("n2")
	if got := len(f.att.createdOn("n2")); got != 1 {
		t.Fatalf("n2 creates = %d after n1's create was refused, want 1", got)
	}
}

// The creates kept in flight are sized by the client budget adc is given (the shipped
// binaries pass their --kube-api-qps budget), not by the node workers; a host may set them.
func TestCreatesInFlightSizedByTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want int
	}{
		{name: "no budget: the default", opts: Options{}, want: DefaultCreatesInFlight},
		{name: "the binaries' defaults (20/30)", opts: Options{APIBudget: volumeattach.NewPriorityLimiter(20, 30)}, want: 4},
		{name: "1000/2000", opts: Options{APIBudget: volumeattach.NewPriorityLimiter(1000, 2000)}, want: 100},
		{name: "set by the host", opts: Options{APIBudget: volumeattach.NewPriorityLimiter(1000, 2000), CreatesInFlight: 8}, want: 8},
		{name: "from DefaultOptions, as the binaries build them", opts: func() Options {
			o := DefaultOptions()
			o.APIBudget = volumeattach.NewPriorityLimiter(1000, 2000)
			return o
		}(), want: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.opts.withDefaults().CreatesInFlight; got != tc.want {
				t.Errorf("CreatesInFlight = %d, want %d", got, tc.want)
			}
		})
	}
}

// A refused create's error is in its pair's reason at the retry, as the dashboard shows it,
// and gone once a create succeeds.
func TestRefusedCreateShowsInThePairReason(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv1")
	f.att.createErr = apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, "x", nil)
	f.syncNode("n1")
	f.att.createErr = nil
	f.clk.Step(creates.DefaultInitialBackoff) // the refused name's backoff is over
	f.syncNode("n1")
	var reason string
	for _, s := range f.c.Snapshot() {
		if s.Pod != "" && s.Node == "n1" {
			reason = s.Reason
		}
	}
	if !strings.Contains(reason, "creating the VolumeAttachment failed, will retry") || !strings.Contains(reason, "forbidden") {
		t.Errorf("pair reason at the retry = %q, want the refusal", reason)
	}
	if got := len(f.att.createdOn("n1")); got != 1 {
		t.Fatalf("n1 creates = %d after the retry, want 1", got)
	}
	if msg := f.c.creates.TakeErr(vaNameOf(t, f, "n1")); msg != "" {
		t.Errorf("refusal still kept after a create succeeded: %q", msg)
	}
}

func vaNameOf(t *testing.T, f *fixture, node string) string {
	t.Helper()
	vas := f.att.createdOn(node)
	if len(vas) == 0 {
		t.Fatalf("no VolumeAttachment created on %s", node)
	}
	return vas[0].Name
}

// Node status waits for a node's pending attaches only while the attaches under way are a
// burst, attachBurst rounds of the create workers: queued, being created or waiting for the
// attacher, all keep the API server busy. A smaller backlog clears in about the time a volume
// would wait.
func TestAttachBacklogIsABurst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		volumes int
		// inFlight is Options.CreatesInFlight, 2 if zero.
		inFlight int
		// sent: the creates are sent; attached: then the attacher marks them all attached.
		sent, attached bool
		want           bool
	}{
		{name: "no attaches", volumes: 0, want: false},
		{name: "fewer than a burst queued", volumes: attachBurst*2 - 1, want: false},
		{name: "a burst queued", volumes: attachBurst * 2, want: true},
		{name: "a burst created, waiting for the attacher", volumes: attachBurst * 2, sent: true, want: true},
		{name: "a burst created and attached", volumes: attachBurst * 2, sent: true, attached: true, want: false},
		{name: "a large budget: fewer than the capped burst", volumes: maxAttachBacklog - 1, inFlight: 100, want: false},
		{name: "a large budget: the capped burst", volumes: maxAttachBacklog, inFlight: 100, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{CreatesInFlight: cmp.Or(tc.inFlight, 2)})
			f.node("n1")
			pvs := make([]string, tc.volumes)
			for i := range pvs {
				pvs[i] = fmt.Sprintf("pv%d", i)
				f.volume(pvs[i], "h-"+pvs[i], v1.ReadWriteOnce)
			}
			if len(pvs) > 0 {
				f.pod("a", "n1", pvs...)
				if _, err := f.c.syncNode(f.ctx, "n1"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.sent {
				f.c.sendQueuedCreates(f.ctx)
				for _, va := range f.att.createdOn("n1") {
					f.c.vaHandler().OnAdd(va, false)
					if tc.attached {
						cur := va.DeepCopy()
						cur.Status.Attached = true
						f.c.vaHandler().OnUpdate(va, cur)
					}
				}
			}
			if got := f.c.attachesBacklogged(); got != tc.want {
				t.Errorf("attachesBacklogged() with %d attaches under way = %v, want %v", f.c.ops.AttachesUnderWay(), got, tc.want)
			}
		})
	}
}
