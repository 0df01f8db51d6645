package creates

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// drain sends every create that is ready, as the workers would.
func drain(ctx context.Context, q *Queue) {
	for q.Len() > 0 {
		q.ProcessNext(ctx)
	}
}

// A create the API server refuses (an admission webhook, a quota) is not sent again before
// its backoff has elapsed, however often its node's reconcile decides it again: the webhook
// sees the backoff's schedule (500 ms doubling to 2m2s, as kube-controller-manager's
// attach operations), not the node's event rate.
func TestRefusedCreateWaitsItsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		// The node's reconcile decides the create again every `every`, from 0 to `until`.
		every, until time.Duration
		// wantDelays are the node retries the refusals asked for; one create each.
		wantDelays []time.Duration
	}{
		{name: "an event every 100 ms for 5 s", every: 100 * time.Millisecond, until: 5 * time.Second,
			wantDelays: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}},
		{name: "an event every 500 ms: doubling to 2m2s", every: 500 * time.Millisecond, until: 371500 * time.Millisecond,
			wantDelays: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
				16 * time.Second, 32 * time.Second, 64 * time.Second, 122 * time.Second, 122 * time.Second, 122 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(0, 0))
			client := fake.NewClientset()
			sent := 0
			client.PrependReactor("create", "volumeattachments", func(k8stesting.Action) (bool, runtime.Object, error) {
				sent++
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"},
					"va", errors.New(`admission webhook "deny.example.com" denied the request`))
			})
			var delays []time.Duration
			q := New(Options{Writer: &volumeattach.ClientAttachmentWriter{Client: client}, Memory: &fakeMemory{}, Clock: clk,
				Abort: func(string) {}, Wake: func(string) {},
				Retry: func(_ string, after time.Duration) { delays = append(delays, after) }})
			t.Cleanup(q.ShutDown)
			ctx := context.Background()
			events := 0
			for at := time.Duration(0); at <= tc.until; at += tc.every {
				clk.SetTime(time.Unix(0, 0).Add(at))
				q.Add(job("va"))
				drain(ctx, q)
				events++
			}
			if sent != len(tc.wantDelays) || !reflect.DeepEqual(delays, tc.wantDelays) {
				t.Errorf("%d reconciles deciding the refused create sent it %d times with retries after %v; want %d, after %v",
					events, sent, delays[:min(len(delays), 12)], len(tc.wantDelays), tc.wantDelays)
			}
		})
	}
}

// Re-deciding a create while its name backs off keeps it waiting: it is not sent, and the
// backoff is not restarted or extended.
func TestReAddDuringBackoffKeepsWaiting(t *testing.T) {
	f := newFixture(t)
	f.w.err = apierrors.NewForbidden(schema.GroupResource{Resource: "volumeattachments"}, "va", errors.New("quota"))
	ctx := context.Background()
	f.q.Add(job("va"))
	drain(ctx, f.q)
	f.w.err = nil
	f.clk.Step(300 * time.Millisecond)
	f.q.Add(job("va"))
	drain(ctx, f.q)
	if _, queued := f.q.Queued("va"); !queued || len(f.mem.settled) != 1 {
		t.Fatalf("re-added during its backoff: queued %v, settled %v; want it waiting, unsent", queued, f.mem.settled)
	}
	f.clk.Step(200 * time.Millisecond) // the first refusal's 500 ms are over
	f.q.Add(job("va"))
	drain(ctx, f.q)
	if want := []string{"failed va", "created va"}; !reflect.DeepEqual(f.mem.settled, want) {
		t.Errorf("after the backoff: settled %v, want %v", f.mem.settled, want)
	}
}

// backoffs counts the names the queue keeps a backoff for.
func backoffs(q *Queue, names []string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, name := range names {
		if q.refusals[name] != nil {
			n++
		}
	}
	return n
}

// The per-name backoff does not outlive the names' pods: a backoff goes when its create
// succeeds, when its queued create is withdrawn, and, for a name no reconcile decides again,
// once it has been over for the longest backoff.
func TestBackoffsAreForgotten(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("va-%d", i))
	}
	// Churn: every create is refused once.
	f.w.err = apierrors.NewForbidden(schema.GroupResource{Resource: "volumeattachments"}, "va", errors.New("denied"))
	for _, name := range names {
		f.q.Add(job(name))
	}
	drain(ctx, f.q)
	if n := backoffs(f.q, names); n != len(names) {
		t.Fatalf("%d names back off after their refusals, want %d", n, len(names))
	}
	// names[0:100]: their pods leave while the creates wait for their backoff (withdrawn).
	f.clk.Step(100 * time.Millisecond)
	for _, name := range names[:100] {
		f.q.Add(job(name))
		if got := f.q.Withdraw(name); got != Cancelled {
			t.Fatalf("withdrawing %s: %v, want Cancelled", name, got)
		}
	}
	// names[100:200]: decided again after the backoff, created.
	f.w.err = nil
	f.clk.Step(time.Second)
	for _, name := range names[100:200] {
		f.q.Add(job(name))
	}
	drain(ctx, f.q)
	// names[200:300]: their pods left; nothing decides them again. The queue goes on.
	f.clk.Step(10 * time.Minute)
	f.q.Add(job("later"))
	drain(ctx, f.q)
	if n := backoffs(f.q, append(names, "later")); n != 0 {
		t.Errorf("%d backoffs kept after the churn, want none", n)
	}
}
