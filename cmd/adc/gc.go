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
// it does not need. Measured with make bench-e2e at 1000 nodes x 10 pods: max RSS 224 MiB
// at 100, 174 MiB at 50, CPU per 1000 attaches 0.81 s and 0.73 s (within noise). After the
// compact cache forms, 40 against 50: CPU per 1000 attaches 0.70-0.78 s and 0.68-0.86 s,
// and a run where the API server made adc relist all pods peaked at 93.5 MiB against 98-99.
const controllerGCPercent = 40

// minGCHeadroom is the least garbage adc lets its heap hold between collections. 40% of a
// small live heap is a few MiB, and a burst's watch events and requests fill that many times
// a second: at 100 nodes x 20 pods (a live heap of about 10 MiB) adc spent a fifth of its CPU
// collecting, and GOGC=100 took 18% off its CPU per attach (docs/performance.md, issue #28).
// From 40 MiB live up (10,000 volumes), 40% is more than this, so the peak memory of large
// clusters (issue #13's goal) is what controllerGCPercent makes it.
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
