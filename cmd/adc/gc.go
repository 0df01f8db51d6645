package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// controllerGCPercent is adc controller's garbage collector target when GOGC is not set.
// Most of adc's heap is its informer caches, which live as long as the process, so the
// default target (100: the heap may grow to twice what is live) mostly buys room for garbage
// it does not need. A lower target trades CPU for memory, and here it costs little CPU: at
// 1000 nodes x 10 pods the CPU per attach at 40 is within noise of 50 and 100, and the peak
// resident memory is the lowest of the three, also when a relist of every pod raises it.
const controllerGCPercent = 40

// minGCHeadroom is the least garbage adc lets its heap hold between collections. 40% of a
// small live heap is a few MiB, and a burst's watch events and requests fill that many times
// a second: with a live heap of about 10 MiB (100 nodes x 20 pods) a 40% target has adc
// spend about a fifth of its CPU collecting, and a target of 100 takes about 18% off its CPU
// per attach, so a small heap gets the larger headroom for at most 16 MiB of memory. From
// 40 MiB live up (10,000 volumes), 40% is more than this, so the peak memory of large
// clusters, where memory matters most, is what controllerGCPercent makes it.
const minGCHeadroom = 16 << 20

// maxGCPercent bounds the target of a nearly empty heap.
const maxGCPercent = 400

// setControllerGC applies controllerGCPercent, with at least minGCHeadroom of garbage,
// unless the operator set GOGC. The target follows the live heap: it is set again after
// every collection.
func setControllerGC() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	last := gcPercentFor(liveHeap())
	debug.SetGCPercent(last)
	afterEachGC(func() {
		if p := gcPercentFor(liveHeap()); p != last {
			debug.SetGCPercent(p)
			last = p
		}
	})
}

// gcPercentFor is the GC target that lets a heap of live bytes grow by
// max(controllerGCPercent%, minGCHeadroom) before the next collection.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := int((minGCHeadroom*100 + live - 1) / live)
	return min(max(p, controllerGCPercent), maxGCPercent)
}

// liveHeap is the heap the last collection found live (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcSentinel is garbage made to be collected: its finalizer runs once a collection has
// ended. It holds a pointer so that the allocator does not batch it with other small objects
// (a finalizer on a batched object may never run).
type gcSentinel struct{ _ *byte }

// afterEachGC calls f from the finalizer goroutine after every garbage collection, for the
// life of the process.
func afterEachGC(f func()) {
	s := &gcSentinel{}
	runtime.SetFinalizer(s, func(*gcSentinel) {
		f()
		afterEachGC(f)
	})
}
