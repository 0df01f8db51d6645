package adc

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// moveClass groups the steps a schedule can take. The classes are offered in this order,
// and the default schedule (the completion after a schedule's chosen prefix) takes the first
// enabled move of the most urgent class (see completionRank).
type moveClass int

const (
	// classContinue: a parked worker goes on (gets its API answer, or resumes after a read).
	classContinue moveClass = iota
	// classApply: the API server applies a call and answers ok (or what the truth says).
	classApply
	// classFault: the API server answers a call with a fault.
	classFault
	// classDeliver: an informer calls its handler with its next notification.
	classDeliver
	// classStore: an informer applies its next watch event to its store.
	classStore
	// classRelist: the VolumeAttachment watch breaks (events lost) or relists.
	classRelist
	// classActor: the external-attacher or a kubelet acts.
	classActor
	// classPodChurn: a pod is deleted or created.
	classPodChurn
	// classStatus, classReconcile, classChecker: a worker takes a key (or the checker runs).
	classStatus
	classReconcile
	classChecker
	// classTick: time passes to the next retry the controller asked for.
	classTick
)

type move struct {
	class moveClass
	label string
	do    func()
}

// moves lists every step the schedule may take now, in a fixed order: a schedule is the
// sequence of indexes into these lists.
func (h *harness) moves() []move {
	var ms []move
	add := func(class moveClass, label string, do func()) { ms = append(ms, move{class, label, do}) }
	for _, t := range h.threads {
		t := t
		switch {
		case t.read != "" && h.resumable(t):
			add(classContinue, t.label()+" goes on "+t.where(), func() { h.run(t) })
		case t.call != nil && t.call.applied && h.resumable(t):
			add(classContinue, t.label()+" gets "+t.call.label()+" -> "+t.call.result(), func() { h.run(t) })
		case t.call != nil && !t.call.applied:
			for _, o := range applicableOutcomes(t.call, h.cfg.faults) {
				o, class := o, classApply
				if o != outcomeOK {
					class = classFault
				}
				add(class, fmt.Sprintf("API applies %s (%s) -> %s", t.call.label(), t.label(), o), func() { h.apply(t.call, o) })
			}
		}
	}
	for _, res := range informerOrder {
		inf := h.informers[res]
		if len(inf.notes) > 0 {
			add(classDeliver, res+" handler gets "+inf.notes[0].label(), func() { h.noteDelivered(inf.deliverNext()) })
		}
	}
	for _, res := range informerOrder {
		inf := h.informers[res]
		if len(inf.events) > 0 {
			add(classStore, res+" store applies "+inf.events[0].label(), inf.applyNext)
		}
	}
	if inf := h.informers[resVAs]; h.cfg.relists {
		switch {
		case inf.broken:
			add(classRelist, fmt.Sprintf("volumeattachments relist at rv=%d", h.api.rv[resVAs]), func() {
				inf.relist(h.api.list(resVAs), fmt.Sprint(h.api.rv[resVAs]))
			})
		case len(inf.events) > 0:
			add(classRelist, fmt.Sprintf("volumeattachments watch breaks (%d events lost)", len(inf.events)), inf.breakWatch)
		}
	}
	h.actorMoves(add)
	for _, n := range sortedKeys(h.statusDirty) {
		n := n
		if h.canStart(threadStatus, n) {
			add(classStatus, "status sync "+n, func() { h.startStatus(n) })
		}
	}
	for _, n := range sortedKeys(h.nodeDirty) {
		n := n
		if h.canStart(threadReconcile, n) {
			add(classReconcile, "reconcile "+n, func() { h.startReconcile(n) })
		}
	}
	// The checker is offered unless its last run started and ended on what it reads now: on
	// the same input it decides the same, so a second run could only lengthen schedules. An
	// uncertain create is the exception: the checker resolves it with a GET, whose answer is
	// the API's, not its input's, and a failed GET leaves it for the next periodic check
	// (every ExpectationCheckInterval). So while one is pending the checker is offered again,
	// as that next check, with the clock moved to it: a pending uncertain create is never a
	// quiet world.
	if h.canStart(threadChecker, "") && memoryCheckerHasWork(h.c) {
		switch {
		case h.checkerInput() != h.lastCheckStart || h.checkerInput() != h.lastCheckEnd:
			add(classChecker, "expectation checker", h.startChecker)
		case memoryHasUncertain(h.c):
			add(classChecker, fmt.Sprintf("clock +%s: expectation checker again (uncertain create pending)", h.c.opts.ExpectationCheckInterval), func() {
				h.clk.Step(h.c.opts.ExpectationCheckInterval)
				h.startChecker()
			})
		}
	}
	if len(h.timers) > 0 {
		sort.Slice(h.timers, func(i, j int) bool { return h.timers[i].at.Before(h.timers[j].at) })
		tm := h.timers[0]
		add(classTick, fmt.Sprintf("clock +%s: %s %s due", tm.at.Sub(h.clk.Now()), tm.queue, tm.node), h.tick)
	}
	return ms
}

// canStart reports whether a worker may take the key now: a free worker slot, no worker of
// the same queue on the key (a workqueue never hands one key to two workers), and no
// worker holding a lock the new one would wait for.
func (h *harness) canStart(kind threadKind, node string) bool {
	workers := 0
	for _, t := range h.threads {
		if t.kind != threadCreate { // the create workers are a pool of their own
			workers++
		}
	}
	if workers >= h.cfg.threads {
		return false
	}
	for _, t := range h.threads {
		if t.kind == kind && t.node == node {
			return false
		}
	}
	// A status sync takes its node's status lock at once, and a new reconcile may take it at
	// any point: neither may start while another thread holds the node's status lock.
	return kind == threadChecker || h.statusLockHolder(node, nil) == nil
}

// tick moves the clock to the earliest timer and queues its key again.
func (h *harness) tick() {
	tm := h.timers[0]
	h.timers = h.timers[1:]
	if tm.at.After(h.clk.Now()) {
		h.clk.SetTime(tm.at)
	}
	if tm.queue == threadStatus {
		h.statusDirty[tm.node] = true
	} else {
		h.nodeDirty[tm.node] = true
	}
}

// noteDelivered records what a VolumeAttachment notification showed the controller.
func (h *harness) noteDelivered(n notification) {
	if name, uid := uidOfNote(n); name != "" {
		h.ev.shown[name] = append(h.ev.shown[name], uid)
		h.ev.shownTypes[name] = append(h.ev.shownTypes[name], n.typ)
	}
	h.mutateDelivered(n)
}

// moveEvidence is what one step showed the controller about VolumeAttachments.
type moveEvidence struct {
	shown        map[string][]types.UID
	shownTypes   map[string][]watch.EventType
	createFailed map[string]bool
	// checker: the expectation checker ran in the step, when it started or when it went on
	// after the GET of an uncertain create (it judges the stored expectations after those).
	checker bool
}

// step takes one move, lets workers that do not wait for the schedule go on, and checks the
// invariants.
func (h *harness) step(m move) {
	before := memoryExpectations(h.c)
	h.ev = moveEvidence{shown: map[string][]types.UID{}, shownTypes: map[string][]watch.EventType{}, createFailed: map[string]bool{}}
	h.stepCount++
	h.trace = append(h.trace, fmt.Sprintf("%3d  %s", h.stepCount, h.short(m.label)))
	m.do()
	h.settle()
	h.drainQueues()
	h.startCreates()
	h.settle()
	h.drainQueues()
	h.noteDetaching()
	h.checkStep(before)
}

// settle lets parked workers go on where the configuration gives the schedule no say: after
// a store read without read preemption, after an applied call without split answers.
func (h *harness) settle() {
	for progress := true; progress; {
		progress = false
		for _, t := range append([]*thread(nil), h.threads...) {
			if t.done || !h.resumable(t) {
				continue
			}
			if (t.read != "" && !h.cfg.reads) || (t.call != nil && t.call.applied && !h.cfg.split) {
				h.run(t)
				progress = true
			}
		}
	}
}

// completionRank orders moves for the default schedule; -1 means the default schedule never
// takes it (faults, watch breaks).
func (h *harness) completionRank(m move) int {
	switch m.class {
	case classContinue:
		return 0
	case classApply:
		return 1
	case classDeliver:
		return 2
	case classStore:
		return 3
	case classRelist:
		if h.informers[resVAs].broken {
			return 4
		}
		return -1
	case classActor:
		return 5
	case classStatus:
		return 6
	case classReconcile:
		return 7
	case classChecker:
		return 8
	case classTick:
		return 9
	case classPodChurn:
		return 10
	}
	return -1
}

// defaultMove is the default schedule's choice: the first move of the most urgent class,
// or -1 when the world has quiesced. Pods are created before any is deleted.
func (h *harness) defaultMove(ms []move) int {
	best, bestRank := -1, 1<<30
	for i, m := range ms {
		r := h.completionRank(m)
		if r < 0 {
			continue
		}
		if m.class == classPodChurn && len(m.label) > 6 && m.label[:6] == "delete" {
			r++
		}
		if r < bestRank {
			best, bestRank = i, r
		}
	}
	return best
}
