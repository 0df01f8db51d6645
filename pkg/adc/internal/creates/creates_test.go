package creates

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeMemory records how each create was settled.
type fakeMemory struct{ settled []string }

func (m *fakeMemory) Created(va *storagev1.VolumeAttachment) {
	m.settled = append(m.settled, "created "+va.Name)
}
func (m *fakeMemory) CreateFailed(va *storagev1.VolumeAttachment, _ string) []string {
	m.settled = append(m.settled, "failed "+va.Name)
	return []string{"waiter"}
}
func (m *fakeMemory) CreateUncertain(va *storagev1.VolumeAttachment, _ time.Time) {
	m.settled = append(m.settled, "uncertain "+va.Name)
}

// writer answers every create with err; entered and release, when set, hold it in flight.
type writer struct {
	err              error
	entered, release chan struct{}
}

func (w *writer) Create(_ context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	if w.entered != nil {
		close(w.entered)
		<-w.release
	}
	if w.err != nil {
		return nil, w.err
	}
	stored := va.DeepCopy()
	stored.UID = "uid"
	return stored, nil
}

func (w *writer) Delete(context.Context, string, types.UID) error { return nil }

type fixture struct {
	q       *Queue
	clk     *testingclock.FakeClock
	mem     *fakeMemory
	w       *writer
	woken   []string
	retried []string
	aborted []string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{mem: &fakeMemory{}, w: &writer{}, clk: testingclock.NewFakeClock(time.Unix(0, 0))}
	f.q = New(Options{Writer: f.w, Memory: f.mem, Clock: f.clk,
		Abort: func(name string) { f.aborted = append(f.aborted, name) },
		Wake:  func(node string) { f.woken = append(f.woken, node) },
		Retry: func(node string, _ time.Duration) { f.retried = append(f.retried, node) }})
	t.Cleanup(f.q.ShutDown)
	return f
}

func job(name string) Job {
	return Job{VA: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1"}}, Volume: "kubernetes.io/csi/d^" + name}
}

func TestQueueSettlesEachAnswer(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "volumeattachments"}, "va", errors.New("no"))
	for _, tc := range []struct {
		name        string
		err         error
		wantSettled string
		wantWoken   []string
		wantErr     bool
	}{
		{"stored", nil, "created va", nil, false},
		{"refused: the reservation goes, its waiters are woken", forbidden, "failed va", []string{"waiter"}, true},
		{"timed out: may have been stored, kept uncertain", apierrors.NewTimeoutError("slow", 1), "uncertain va", nil, true},
		{"connection lost: may have been stored", errors.New("connection reset"), "uncertain va", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.w.err = tc.err
			f.q.Add(job("va"))
			if !f.q.ProcessNext(context.Background()) {
				t.Fatal("queue shut down")
			}
			if !reflect.DeepEqual(f.mem.settled, []string{tc.wantSettled}) || !reflect.DeepEqual(f.woken, tc.wantWoken) {
				t.Errorf("settled %v, woken %v; want [%s], %v", f.mem.settled, f.woken, tc.wantSettled, tc.wantWoken)
			}
			if got := len(f.retried) == 1; got != tc.wantErr {
				t.Errorf("retried %v, want a retry of n1: %v", f.retried, tc.wantErr)
			}
			if msg := f.q.TakeErr("va"); (msg != "") != tc.wantErr {
				t.Errorf("last refusal %q, want one: %v", msg, tc.wantErr)
			}
		})
	}
}

func TestWithdraw(t *testing.T) {
	f := newFixture(t)
	if got := f.q.Withdraw("va"); got != Answered {
		t.Fatalf("nothing queued: %v, want Answered", got)
	}

	f.q.Add(job("va"))
	if got := f.q.Withdraw("va"); got != Cancelled {
		t.Fatalf("queued: %v, want Cancelled", got)
	}
	f.q.ProcessNext(context.Background()) // the worker finds nothing to send
	if !reflect.DeepEqual(f.mem.settled, []string{"failed va"}) || len(f.retried) != 0 {
		t.Fatalf("a withdrawn create was settled %v (retried %v), want only its withdrawal", f.mem.settled, f.retried)
	}

	f.mem.settled, f.woken = nil, nil
	f.w.entered, f.w.release = make(chan struct{}), make(chan struct{})
	f.q.Add(job("vb"))
	done := make(chan struct{})
	go func() { f.q.ProcessNext(context.Background()); close(done) }()
	<-f.w.entered
	if got := f.q.Withdraw("vb"); got != Awaited {
		t.Fatalf("in flight: %v, want Awaited", got)
	}
	close(f.w.release)
	<-done
	sort.Strings(f.woken)
	if !reflect.DeepEqual(f.mem.settled, []string{"created vb"}) || !reflect.DeepEqual(f.woken, []string{"n1"}) {
		t.Errorf("settled %v, woken %v; want the create stored and its node woken to detach it", f.mem.settled, f.woken)
	}
}

func TestDropQueued(t *testing.T) {
	f := newFixture(t)
	f.q.Add(job("va"))
	f.q.DropQueued()
	if !reflect.DeepEqual(f.mem.settled, []string{"failed va"}) || !reflect.DeepEqual(f.aborted, []string{"va"}) {
		t.Errorf("settled %v, aborted %v; want the unsent create forgotten", f.mem.settled, f.aborted)
	}
}
