package attachstate

import (
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// A ReadWriteOnce volume is held for its node through every step of its attachment's life,
// whichever of the store, the handler and the create's return comes first, and is free again
// only once the attachment is proven gone. Check holds after every step.
func TestReservationHoldsThroughEveryOrder(t *testing.T) {
	created := storedVA("csi-a", "n1", "pv1", "uid-1", "100")
	type step struct {
		what string
		do   func(m *State, s *fakeStore)
	}
	store := step{"the store gets the object", func(_ *State, s *fakeStore) { s.vas["csi-a"] = created }}
	handler := step{"the handler delivers it", func(m *State, _ *fakeStore) { m.Observed(created) }}
	returns := step{"the create returns", func(m *State, _ *fakeStore) { m.Created(created) }}
	checker := step{"the checker finds it in the store", func(m *State, _ *fakeStore) { m.ObserveFromStore("csi-a", "uid-1") }}
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
			if other := m.Reserve("n1", Volume{Name: vol1}); other != "" {
				t.Fatalf("free volume held by %q", other)
			}
			m.ExpectCreate(storedVA("csi-a", "n1", "pv1", "", ""), vol1, time.Now())
			for _, st := range tc.steps {
				st.do(m, s)
				if err := m.Check(); err != nil {
					t.Fatalf("after %q: %v", st.what, err)
				}
				if other := m.Reserve("n2", Volume{Name: vol1}); other != "n1" {
					t.Fatalf("after %q: n2 found the volume held by %q, want n1", st.what, other)
				}
			}
			delete(s.vas, "csi-a")
			wake := m.Gone(created)
			if len(wake) != 1 || wake[0] != "n2" {
				t.Errorf("the delete woke %v, want n2 (it waited)", wake)
			}
			if other := m.Reserve("n2", Volume{Name: vol1}); other != "" {
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
		event     func(m *State)
		wantEnded bool
	}{
		{"its own object", func(m *State) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-2", "200")) }, true},
		{"an older object under the name", func(m *State) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-1", "100")) }, false},
		{"a newer object under the name", func(m *State) { m.Observed(storedVA("csi-a", "n1", "pv1", "uid-3", "300")) }, true},
		{"the delete of an older object", func(m *State) { m.Gone(storedVA("csi-a", "n1", "pv1", "uid-1", "100")) }, false},
		{"the delete of its own object", func(m *State) { m.Gone(storedVA("csi-a", "n1", "pv1", "uid-2", "250")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory("n1")
			m.ExpectCreate(storedVA("csi-a", "n1", "pv1", "", ""), vol1, time.Now())
			m.Created(storedVA("csi-a", "n1", "pv1", "uid-2", "200"))
			tc.event(m)
			if _, pending := m.Expectations()["csi-a"]; pending == tc.wantEnded {
				t.Errorf("expectation pending = %v, want %v", pending, !tc.wantEnded)
			}
		})
	}
}

var _ Store = (*fakeStore)(nil)

// One disk named by two PersistentVolumes is one volume: a node attaching it through either
// holds it against every other node, whichever PersistentVolume that node names it by.
func TestOneDiskTwoPersistentVolumes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(m *State, s *fakeStore)
	}{
		{"reserved through the other PersistentVolume", func(m *State, _ *fakeStore) {
			m.Reserve("n1", Volume{Name: vol1})
		}},
		{"expected through the other PersistentVolume", func(m *State, _ *fakeStore) {
			m.Reserve("n1", Volume{Name: vol1})
			m.ExpectCreate(storedVA("csi-a", "n1", "pv1", "", ""), vol1, time.Now())
			m.Created(storedVA("csi-a", "n1", "pv1", "uid-1", "100"))
		}},
		{"attached through the other PersistentVolume", func(m *State, s *fakeStore) {
			va := storedVA("csi-a", "n1", "pv1", "uid-1", "100")
			s.vas[va.Name] = va
			m.Observed(va)
		}},
		{"attached through a PersistentVolume that is gone", func(m *State, s *fakeStore) {
			va := storedVA(migration.VolumeAttachmentName("h1", "d", "n1"), "n1", "deleted", "uid-1", "100")
			s.vas[va.Name] = va
			m.Observed(va)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, s := newTestMemory("n1", "n2")
			tc.setup(m, s)
			// pv1-again names the same disk (driver d, handle h1).
			if other := m.Reserve("n2", Volume{Name: vol1}); other != "n1" {
				t.Errorf("n2 found the disk held by %q, want n1", other)
			}
			if err := m.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// A failed in-tree attach releases its reservation and wakes the nodes that waited for it.
func TestReleaseWakesWaiters(t *testing.T) {
	m, _ := newTestMemory("n1", "n2")
	m.Reserve("n1", Volume{Name: vol1})
	m.Reserve("n2", Volume{Name: vol1})
	if wake := m.Release(vol1, "n1"); len(wake) != 1 || wake[0] != "n2" {
		t.Errorf("Release woke %v, want n2", wake)
	}
	if wake := m.Release(vol1, "n1"); len(wake) != 0 {
		t.Errorf("a second Release woke %v, want none", wake)
	}
}

// A node stops waiting for a volume once its reconcile no longer asks for it (the pod left):
// waiters are bounded by the waits in force.
func TestWaitersEndWithTheWait(t *testing.T) {
	m, _ := newTestMemory("n1", "n2", "n3")
	m.Reserve("n1", Volume{Name: vol1})
	m.Reserve("n2", Volume{Name: vol1})
	m.Reserve("n3", Volume{Name: vol1})
	m.ForgetUnrenewed("n2", nil, map[string]bool{}, nil)
	if got := m.Waiters(vol1); len(got) != 1 || got[0] != "n3" {
		t.Errorf("waiters %v, want [n3]", got)
	}
	m.ForgetUnrenewed("n3", nil, map[string]bool{vol1: true}, nil)
	m.ForgetUnrenewed("n3", nil, nil, nil)
	if n := m.WaitedVolumes(); n != 0 {
		t.Errorf("%d volumes still waited for, want 0", n)
	}
	if err := m.Check(); err != nil {
		t.Error(err)
	}
}
