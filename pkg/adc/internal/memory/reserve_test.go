package memory

import (
	"testing"
	"time"
)

// A ReadWriteOnce volume is held for its node through every step of its attachment's life,
// whichever of the store, the handler and the create's return comes first, and is free again
// only once the attachment is proven gone. Check holds after every step.
func TestReservationHoldsThroughEveryOrder(t *testing.T) {
	created := storedVA("csi-a", "n1", "pv1", "uid-1", "100")
	type step struct {
		what string
		do   func(m *Memory, s *fakeStore)
	}
	store := step{"the store gets the object", func(_ *Memory, s *fakeStore) { s.vas["csi-a"] = created }}
	handler := step{"the handler delivers it", func(m *Memory, _ *fakeStore) { m.Observed(created) }}
	returns := step{"the create returns", func(m *Memory, _ *fakeStore) { m.Created(created) }}
	checker := step{"the checker finds it in the store", func(m *Memory, _ *fakeStore) { m.ObserveFromStore("csi-a", "uid-1") }}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"create returns, then store, then handler", []step{returns, store, handler}},
		{"store before the create returns, then handler", []step{store, returns, handler}},
		{"store, create returns, checker before the handler", []step{store, returns, checker, handler}},
		{"handler before the create returns", []step{store, handler, returns}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, s := newTestMemory("n1", "n2")
			if other := m.Reserve("n1", "pv:pv1", ""); other != "" {
				t.Fatalf("free volume held by %q", other)
			}
			m.ExpectCreate(storedVA("csi-a", "n1", "pv1", "", ""), time.Now())
			for _, st := range tc.steps {
				st.do(m, s)
				if err := m.Check(); err != nil {
					t.Fatalf("after %q: %v", st.what, err)
				}
				if other := m.Reserve("n2", "pv:pv1", ""); other != "n1" {
					t.Fatalf("after %q: n2 found the volume held by %q, want n1", st.what, other)
				}
			}
			delete(s.vas, "csi-a")
			wake := m.Gone(created)
			if len(wake) != 1 || wake[0] != "n2" {
				t.Errorf("the delete woke %v, want n2 (it waited)", wake)
			}
			if other := m.Reserve("n2", "pv:pv1", ""); other != "" {
				t.Errorf("after the delete the volume is still held by %q", other)
			}
			if err := m.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// An expectation ends only on evidence about its own object: an older object under the name,
// or a tombstone of another UID, leaves it pending; a newer one (a replacement) ends it.
func TestExpectationEndsOnlyOnItsObject(t *testing.T) {
	for _, tc := range []struct {
		name      string
		event     func(m *Memory)
		wantEnded bool
	}{
		{"its own object", func(m *Memory) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-2", "200")) }, true},
		{"an older object under the name", func(m *Memory) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-1", "100")) }, false},
		{"a newer object under the name", func(m *Memory) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-3", "300")) }, true},
		{"the delete of an older object", func(m *Memory) { m.Gone(storedVA("csi-a", "n1", "pv1", "uid-1", "100")) }, false},
		{"the delete of its own object", func(m *Memory) { m.Gone(storedVA("csi-a", "n1", "pv1", "uid-2", "250")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory("n1")
			m.ExpectCreate(storedVA("csi-a", "n1", "pv1", "", ""), time.Now())
			m.Created(storedVA("csi-a", "n1", "pv1", "uid-2", "200"))
			tc.event(m)
			if _, pending := m.Expectations()["csi-a"]; pending == tc.wantEnded {
				t.Errorf("expectation pending = %v, want %v", pending, !tc.wantEnded)
			}
		})
	}
}

var _ Store = (*fakeStore)(nil)
