package adc

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// The controller's workers (a node reconcile, a status sync, the expectation checker) run
// as threads of the explorer: each on its own goroutine, but only one goroutine of the whole
// test runs at any time. A thread runs until it reaches a point where the real one could be
// preempted for long (an API call, or its read of a node's VolumeAttachments), parks there
// and hands control back to the schedule, which decides what happens in the meantime and when
// the thread goes on. The hand-over through channels orders every memory access, so the race
// detector sees no race the real controller would not have; and the order of everything is
// the schedule's, so a schedule replays exactly.

type threadKind string

const (
	threadReconcile threadKind = "reconcile"
	threadStatus    threadKind = "status"
	threadChecker   threadKind = "checker"
	// threadCreate is a create worker sending one queued VolumeAttachment create.
	threadCreate threadKind = "create"
)

type thread struct {
	id   int
	kind threadKind
	node string

	resume chan struct{}
	park   chan struct{}
	done   bool
	panic  string

	// Where the thread is parked: at an API call, or right after a store read.
	call *apiCall
	read string
	// readSeen and readExpected are, at the thread's last store read, the VolumeAttachments
	// the store listed on the node and those the controller expected there.
	readSeen, readExpected map[string]bool
	// stale is, per node, a VolumeAttachment store read made outside the controller's lock
	// that the thread's next read of the node returns (mutantReadOutsideLock).
	stale map[string][]interface{}

	// history is every park point passed with what the thread got there: with the world and
	// the controller's memory it identifies the thread's state.
	history []string
	// holdsStatusLock: the thread holds its node's status lock (nodestatus.Locks) while
	// parked. A status sync holds it from its start to its end; a node reconcile takes it
	// right before its fresh Node read and releases it once its detach decisions are made,
	// before it sends their deletes. The harness learns it from the lock itself each time the
	// thread parks (learnStatusLock), not from a model of the code, so a change of where the
	// controller takes or releases the lock cannot deadlock the harness.
	holdsStatusLock bool
	// releasedStatusLock: a node reconcile held the status lock and released it; it never
	// takes it again in this run (freshNode reads once per reconcile).
	releasedStatusLock bool
	// freshReadStep is the step at which the API server answered the thread's fresh Node
	// read; -1 before it has one.
	freshReadStep int

	// va is a create thread's VolumeAttachment; createNode the node creates.Queue.Send returned.
	va, createNode string

	retryAfter time.Duration
	err        error
}

func (t *thread) label() string {
	if t.kind == threadChecker {
		return fmt.Sprintf("T%d checker", t.id)
	}
	if t.kind == threadCreate {
		return fmt.Sprintf("T%d create %s", t.id, t.va)
	}
	return fmt.Sprintf("T%d %s %s", t.id, t.kind, t.node)
}

// where is the thread's park point, for move labels and state keys.
func (t *thread) where() string {
	switch {
	case t.call != nil:
		return "call " + t.call.label() + " [" + t.call.result() + "]"
	case t.read != "":
		return "after " + t.read
	}
	return "running"
}

// start runs body as a new thread until it parks or ends.
func (h *harness) start(t *thread, body func()) {
	h.nextThreadID++
	t.id, t.freshReadStep = h.nextThreadID, -1
	t.resume, t.park = make(chan struct{}), make(chan struct{})
	h.threads = append(h.threads, t)
	go func() {
		<-t.resume
		defer func() {
			if r := recover(); r != nil {
				t.panic = fmt.Sprintf("%v\n%s", r, debug.Stack())
			}
			t.done = true
			t.park <- struct{}{}
		}()
		body()
	}()
	h.run(t)
}

// run lets a parked thread go on until it parks again or ends.
func (h *harness) run(t *thread) {
	h.current = t
	if t.kind == threadChecker {
		h.ev.checker = true
	}
	t.resume <- struct{}{}
	<-t.park
	h.current = nil
	h.takeQueuedCreates(t)
	h.learnStatusLock(t)
	if t.done {
		h.finished(t)
	}
}

// learnStatusLock updates, after t parked or ended, whether t holds its node's status
// lock. Only t ran since the last look, and every other parked thread keeps what it held,
// so the lock is t's exactly when it is locked and no other thread holds it; a lock
// locked by another thread while t also claims it is a harness bug.
func (h *harness) learnStatusLock(t *thread) {
	if t.kind == threadChecker || t.kind == threadCreate {
		return
	}
	held := h.statusLocked(t.node)
	other := h.statusLockHolder(t.node, t) != nil
	was := t.holdsStatusLock
	switch {
	case t.done:
		t.holdsStatusLock = false
	case held && !other:
		t.holdsStatusLock = true
	case !held:
		t.holdsStatusLock = false
	case was:
		h.violate(invHarness, fmt.Sprintf("%s and another thread both hold the status lock of %s", t.label(), t.node))
	}
	if was && !t.holdsStatusLock {
		t.releasedStatusLock = true
	}
	if c := t.call; c != nil && c.verb == "get" && c.resource == resNodes && t.kind == threadReconcile && !t.holdsStatusLock {
		if _, inCache, _ := h.informers[resNodes].store.GetByKey(c.name); inCache {
			h.violate(invHarness, fmt.Sprintf("%s reads its node fresh without the node's status lock", t.label()))
		}
	}
}

// statusLocked reports whether node's status lock is held now. Only the harness's goroutine
// runs while it looks, so the answer holds until a thread runs again.
func (h *harness) statusLocked(node string) bool { return h.c.nodeStatus.Locks().Held(node) }

// yield parks the calling thread; it is called on the thread's goroutine.
func (h *harness) yield(t *thread) {
	t.park <- struct{}{}
	<-t.resume
}

// storeRead is called by the VolumeAttachment store when a worker lists a node's
// VolumeAttachments: the worker parks right after the read.
func (h *harness) storeRead(node string, objs []interface{}) {
	t := h.current
	if t == nil || h.abandoning {
		return
	}
	// A read under memory's lock (actual.Read reads the store under it, so the
	// handler cannot run between the store read and the expectation read) is no point at
	// which another thread can run: pausing there would only deadlock the harness.
	if h.c.mem.Busy() {
		return
	}
	h.parkAfterRead(t, node, objs, "")
}

// parkAfterRead records what the thread read of node's VolumeAttachments (the objects, and
// the create expectations of node at that moment), then parks it until the scheduler
// resumes it.
func (h *harness) parkAfterRead(t *thread, node string, objs []interface{}, how string) {
	var names []string
	t.readSeen = map[string]bool{}
	for _, o := range objs {
		names = append(names, objLabel(o))
		if va, ok := cached.VAOf(o); ok {
			t.readSeen[va.Name] = true
		}
	}
	t.readExpected = map[string]bool{}
	for name, e := range memoryExpectations(h.c) {
		if e.node == node {
			t.readExpected[name] = true
		}
	}
	t.read = fmt.Sprintf("read VAs of %s%s: [%s]", node, how, strings.Join(names, " "))
	t.history = append(t.history, t.read)
	h.yield(t)
	t.read = ""
}

// resumable reports whether the thread may go on now without blocking on a lock another
// parked thread holds. Which code takes the status lock is not modelled: a worker that has
// neither taken nor released its node's status lock may take it at any point of its next
// run, so it waits while another thread holds the lock. A thread holding a lock never
// waits for one (memory's lock is never held across a park), so there is no cycle: the holder can
// always go on and end.
func (h *harness) resumable(t *thread) bool {
	return !h.mayTakeStatusLock(t) || h.statusLockHolder(t.node, t) == nil
}

// mayTakeStatusLock reports whether the thread may yet take its node's status lock: a node
// reconcile or status sync that has neither taken nor released it (a status sync parked
// before it takes its lock, as with mutantReadOutsideLock, included).
func (h *harness) mayTakeStatusLock(t *thread) bool {
	return t.kind != threadChecker && t.kind != threadCreate && !t.holdsStatusLock && !t.releasedStatusLock
}

// statusLockHolder is the thread other than except that holds node's status lock,
// or nil.
func (h *harness) statusLockHolder(node string, except *thread) *thread {
	for _, o := range h.threads {
		if o != except && !o.done && o.holdsStatusLock && o.node == node {
			return o
		}
	}
	return nil
}

// abandon lets every parked thread run to its end, answering its calls with errors, so that
// no goroutine outlives its schedule. Lock holders go first: a node reconcile that may take
// a status lock must find it free.
func (h *harness) abandon() {
	h.abandoning = true
	for len(h.threads) > 0 {
		progress := false
		for _, t := range append([]*thread(nil), h.threads...) {
			if !t.done && h.resumable(t) {
				h.run(t)
				progress = true
			}
		}
		if !progress {
			panic("interleave: abandoned threads wait for each other's status locks")
		}
	}
}
