package adc

import (
	"fmt"
	"hash/fnv"
	"runtime/debug"
	"strings"
	"time"
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

	// history is every park point passed with what the thread got there: with the world and
	// the controller's memory it identifies the thread's state.
	history []string
	// holdsStatusLock: a node reconcile took the node's status lock before its fresh Node read
	// and holds it until it ends (lockNodeStatus).
	holdsStatusLock bool
	// freshReadStep is the step at which the API server answered the thread's fresh Node
	// read; -1 before it has one.
	freshReadStep int

	retryAfter time.Duration
	err        error
}

func (t *thread) label() string {
	if t.kind == threadChecker {
		return fmt.Sprintf("T%d checker", t.id)
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
	t.resume <- struct{}{}
	<-t.park
	h.current = nil
	if t.done {
		h.finished(t)
	}
}

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
	// A read under the controller's lock (actualAttachments reads the store under it, so the
	// handler cannot run between the store read and the expectation read) is no point at
	// which another thread can run: pausing there would only deadlock the harness.
	if !h.c.mu.TryLock() {
		return
	}
	h.c.mu.Unlock()
	var names []string
	t.readSeen = map[string]bool{}
	for _, o := range objs {
		names = append(names, objLabel(o))
		if va, ok := vaOf(o); ok {
			t.readSeen[va.Name] = true
		}
	}
	t.readExpected = map[string]bool{}
	for name, e := range memoryExpectations(h.c) {
		if e.node == node {
			t.readExpected[name] = true
		}
	}
	t.read = fmt.Sprintf("read VAs of %s: [%s]", node, strings.Join(names, " "))
	t.history = append(t.history, t.read)
	h.yield(t)
	t.read = ""
}

// resumable reports whether the thread may go on now without blocking on a lock another
// parked thread holds: a node reconcile that has not taken its node's status lock yet may be
// about to, and must wait while a status sync of the node (which holds it) is in flight.
func (h *harness) resumable(t *thread) bool {
	if t.kind != threadReconcile || t.holdsStatusLock {
		return true
	}
	for _, o := range h.threads {
		if o.kind == threadStatus && !o.done && statusStripe(o.node) == statusStripe(t.node) {
			return false
		}
	}
	return true
}

// statusLockHeld reports whether a node reconcile holds the status lock stripe of node.
func (h *harness) statusLockHeld(node string) bool {
	for _, o := range h.threads {
		if o.kind == threadReconcile && !o.done && o.holdsStatusLock && statusStripe(o.node) == statusStripe(node) {
			return true
		}
	}
	return false
}

// statusStripe is the stripe of lockNodeStatus a node's status lock is on.
func statusStripe(node string) uint32 {
	f := fnv.New32a()
	_, _ = f.Write([]byte(node))
	return f.Sum32() % statusLockStripes
}

// abandon lets every parked thread run to its end, answering its calls with errors, so that
// no goroutine outlives its schedule. Status syncs go first: a node reconcile waiting for
// the status lock must find it free.
func (h *harness) abandon() {
	h.abandoning = true
	for _, kind := range []threadKind{threadStatus, threadChecker, threadReconcile} {
		for _, t := range h.threads {
			if t.kind == kind && !t.done {
				h.run(t)
			}
		}
	}
	h.threads = nil
}
