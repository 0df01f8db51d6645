package main

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		live uint64
		want int
	}{
		{name: "before the first collection: the most", live: 0, want: maxGCPercent},
		{name: "a nearly empty heap: capped", live: 1 * mib, want: maxGCPercent},
		{name: "a small heap: the headroom", live: 8 * mib, want: 200},
		{name: "a small heap, rounded up", live: 12 * mib, want: 134},
		{name: "at the crossing: the controller's percent", live: 40 * mib, want: controllerGCPercent},
		{name: "a large heap: the controller's percent", live: 400 * mib, want: controllerGCPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcPercentFor(tc.live); got != tc.want {
				t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
			}
		})
	}
}

// afterEachGC must fire after every collection, not just the first: the target follows the
// live heap for the life of the process.
func TestAfterEachGCFiresEveryCollection(t *testing.T) {
	var calls atomic.Int32
	afterEachGC(func() { calls.Add(1) })
	for want := int32(1); want <= 3; want++ {
		err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			runtime.GC()
			return calls.Load() >= want, nil
		})
		if err != nil {
			t.Fatalf("after %d collections the callback ran %d times, want %d", want, calls.Load(), want)
		}
	}
}
