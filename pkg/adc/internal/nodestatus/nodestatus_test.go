package nodestatus

import (
	"testing"
	"time"
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

// Two nodes on one stripe share its lock; a node always gets the same one.
func TestLocksStripe(t *testing.T) {
	var l Locks
	if first, again := l.Stripe("n1"), l.Stripe("n1"); first != again {
		t.Fatal("a node's stripe changed")
	}
	unlock := l.Lock("n1")
	if l.Stripe("n1").TryLock() {
		t.Fatal("n1's stripe is free while n1 is locked")
	}
	unlock()
	if !l.Stripe("n1").TryLock() {
		t.Fatal("n1's stripe is held after its unlock")
	}
}
