package adc

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
)

// exploreConfig is what a schedule may do besides the ordinary steps.
type exploreConfig struct {
	// threads bounds the workers in flight at once (node reconciles, status syncs, checker).
	threads int
	// split: an API answer reaches its worker in a step of its own, so informer events can
	// come before the worker sees the answer. Otherwise it returns with the call's apply.
	split bool
	// reads: a worker can be preempted right after reading a node's VolumeAttachments.
	reads bool
	// relists: the VolumeAttachment watch can break (events lost) and relist.
	relists bool
	// faults are the API answers besides ok the schedule may give a call.
	faults []outcome
	// mutant puts a fixed defect back (interleave_mutants_test.go); "" for none.
	mutant mutant
}

// harness is one schedule's world: the API truth, the informers, the controller (built by
// New on an informer factory that is never started) and the workers in flight.
type harness struct {
	cfg exploreConfig
	w   *worldSpec
	c   *Controller
	clk *testingclock.FakeClock
	ctx context.Context

	// machineOff: the shutdown node's machine is off (worldSpec.shutdown).
	machineOff bool

	api       *apiTruth
	informers map[string]*informerModel
	vas       *vaStore

	current      *thread
	threads      []*thread
	nextThreadID int
	nextCallID   int
	abandoning   bool

	// nodeDirty and statusDirty model the two workqueues: a key waits there until a worker
	// takes it; one worker per key at a time.
	nodeDirty, statusDirty map[string]bool
	// creates are the names the create queue holds, in its order, each with what the
	// reconcile that queued it had read (startCreates hands them to create threads).
	creates []queuedCreate
	timers  []timer
	created map[string]bool

	// ev is what the current step showed the controller, for the expectation invariant.
	ev moveEvidence
	// inflightCreate is the latest create sent for each VolumeAttachment name.
	inflightCreate map[string]*apiCall
	// expEnded says how each name's create expectation last ended, to explain violations.
	expEnded map[string]string
	// lastCheckStart and lastCheckEnd are what the expectation checker read when its last
	// run started and what it would read when that run ended. Only an input it both started
	// and ended on is one on which a run decides nothing new: a state the run changed and
	// that came back (a delete request it pruned, sent again by a worker that read the store
	// before the prune), or one that changed while it ran (it decides on what it read at its
	// start), is offered to it again.
	lastCheckStart, lastCheckEnd string

	// kubelet is what the kubelets have mounted; inUseSince is the step at which each
	// node|volume entered status.volumesInUse.
	kubelet    kubeletState
	inUseSince map[string]int
	// lastFreshRead is, per node, the step at which the API server answered the fresh Node
	// read a reconcile of the node last got; detachEvidence is, per node|volume adc marked
	// detaching, the fresh read that decision was made on; prevDetaching what was marked
	// after the previous step.
	lastFreshRead  map[string]int
	detachEvidence map[string]int
	prevDetaching  map[string]bool

	// unmutate puts back what a mutant replaced in the controller's package (mutateInstall).
	unmutate func()

	stepCount  int
	violations []violation
	trace      []string
	shortNames *strings.Replacer
}

// short is a trace text with VolumeAttachment names shortened.
func (h *harness) short(s string) string { return h.shortNames.Replace(s) }

// timer is a retry the controller asked for (a worker's retryAfter).
type timer struct {
	at    time.Time
	queue threadKind
	node  string
}

// informerOrder is the order informers are offered in.
var informerOrder = []string{resPods, resNodes, resVAs}

// fakeClient backs the informer factories and the wrapped clientset; no call ever reaches it.
var fakeClient = fake.NewClientset()

// interleaveStart is the fake clock's start.
var interleaveStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(w *worldSpec, cfg exploreConfig) *harness {
	h := &harness{cfg: cfg, w: w, clk: testingclock.NewFakeClock(interleaveStart),
		ctx:       klog.NewContext(context.Background(), logr.Discard()),
		informers: map[string]*informerModel{}, nodeDirty: map[string]bool{}, statusDirty: map[string]bool{},
		created: map[string]bool{}, inflightCreate: map[string]*apiCall{}, expEnded: map[string]string{},
		kubelet: kubeletState{}, inUseSince: map[string]int{}, lastFreshRead: map[string]int{}, detachEvidence: map[string]int{},
		prevDetaching: map[string]bool{}}
	h.unmutate = h.mutateInstall()
	h.api = newAPITruth(h)
	h.vas = newVAStore(h)
	h.shortNames = w.shortener()
	factory := informers.NewSharedInformerFactory(fakeClient, 0)
	c, err := New(interleaveClient{Interface: fakeClient, h: h}, nil, factory, Options{
		Clock: h.clk, Recorder: &record.FakeRecorder{},
	})
	if err != nil {
		panic(err)
	}
	h.c = c
	if len(w.policies) > 0 {
		c.detachRules.Store(migration.CompileDetachPolicies(w.policies, c.opts.MaxWaitForUnmount))
	}
	c.vas = h.vas
	podStore := c.pods
	c.pods = sortedIndexer{podStore}
	nodeStore := factory.Core().V1().Nodes().Informer().GetIndexer()
	h.informers[resPods] = &informerModel{res: resPods, store: podStore, handler: c.podHandler()}
	h.informers[resNodes] = &informerModel{res: resNodes, store: nodeStore, handler: c.nodeHandler()}
	h.informers[resVAs] = &informerModel{res: resVAs, store: h.vas, handler: c.vaHandler(), setRV: func(rv string) { h.vas.rv = rv }}

	// The static objects, as synced caches with their handlers run.
	drivers, csiNodes, pvs, pvcs := w.staticObjects()
	for _, o := range drivers {
		must(factory.Storage().V1().CSIDrivers().Informer().GetIndexer().Add(o))
		c.csiDriverHandler().OnAdd(o, true)
	}
	for _, o := range csiNodes {
		must(factory.Storage().V1().CSINodes().Informer().GetIndexer().Add(o))
		c.csiNodeHandler().OnAdd(o, true)
	}
	for _, o := range pvs {
		must(factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o))
		c.pvHandler().OnAdd(o, true)
	}
	for _, o := range pvcs {
		must(factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o))
		c.pvcHandler().OnAdd(o, true)
	}
	// The starting truth, listed by the informers and handled, as when Run starts workers.
	for _, n := range w.nodes {
		h.api.nodes[n] = w.nodeObject(n, interleaveStart)
	}
	for _, a := range w.attached {
		if a.inUse {
			h.kubelet.set(a.node, w.uniqueName(a.pv), true)
			h.inUseSince[a.node+"|"+w.uniqueName(a.pv)] = 0
		}
	}
	for _, a := range w.attached {
		va := w.attachedVA(a)
		h.api.incarnation[va.Name]++
		va.UID = types.UID(fmt.Sprintf("%s#%d", va.Name, h.api.incarnation[va.Name]))
		va.ResourceVersion = h.api.nextRV(resVAs)
		h.api.vas[va.Name] = va
	}
	for _, p := range w.pods {
		if p.present {
			pod := w.podObject(p)
			pod.ResourceVersion = h.api.nextRV(resPods)
			h.api.pods[worldNamespace+"/"+p.name] = pod
		}
	}
	for _, res := range informerOrder {
		inf := h.informers[res]
		for _, obj := range h.api.list(res) {
			must(inf.store.Add(obj))
			inf.handler.OnAdd(obj, true)
		}
	}
	h.vas.rv = fmt.Sprint(h.api.rv[resVAs])
	c.enqueueAllNodes()
	h.drainQueues()
	return h
}

// close ends the schedule: parked workers finish, the queues stop.
func (h *harness) close() {
	h.abandon()
	h.c.nodeQueue.ShutDown()
	h.c.statusQueue.ShutDown()
	h.c.creates.ShutDown()
	h.unmutate()
}

// queuedCreate is a create the create queue holds, with the store read of the reconcile
// that decided it: the redundant-create invariant judges the create on that read.
type queuedCreate struct {
	name               string
	by                 string
	readSeen, expected map[string]bool
}

// takeQueuedCreates moves what the create queue holds into h.creates, attributed to t, the
// only thread that ran since the last look.
func (h *harness) takeQueuedCreates(t *thread) {
	for h.c.creates.Len() > 0 {
		name, _ := h.c.creates.Get()
		h.c.creates.Done(name)
		h.creates = append(h.creates, queuedCreate{name: name, by: t.label(), readSeen: t.readSeen, expected: t.readExpected})
	}
}

// startCreates hands each queued create to a create thread of its own, as the create
// workers take them (there are more workers than a world has volumes), unless a thread
// still works on the name (a workqueue hands a key to one worker at a time). A create
// thread runs to its API call, so starting it at once loses no interleaving: what the
// schedule chooses is when the API server applies the call.
func (h *harness) startCreates() {
	var left []queuedCreate
	for _, q := range h.creates {
		busy := false
		for _, t := range h.threads {
			if t.kind == threadCreate && t.va == q.name {
				busy = true
			}
		}
		if busy {
			left = append(left, q)
			continue
		}
		q := q
		node := ""
		if j, ok := h.c.creates.Queued(q.name); ok {
			node = j.VA.Spec.NodeName
		}
		t := &thread{kind: threadCreate, node: node, va: q.name, readSeen: q.readSeen, readExpected: q.expected}
		h.start(t, func() {
			t.createNode, t.err = h.c.creates.Send(h.ctx, q.name)
		})
	}
	h.creates = left
}

// drainQueues moves what the controller queued into the explorer's dirty sets.
func (h *harness) drainQueues() {
	for h.c.nodeQueue.Len() > 0 {
		k, _ := h.c.nodeQueue.Get()
		h.c.nodeQueue.Done(k)
		h.nodeDirty[k] = true
	}
	for h.c.statusQueue.Len() > 0 {
		k, _ := h.c.statusQueue.Get()
		h.c.statusQueue.Done(k)
		h.statusDirty[k] = true
	}
}

func (h *harness) startReconcile(node string) {
	delete(h.nodeDirty, node)
	t := &thread{kind: threadReconcile, node: node}
	h.start(t, func() {
		h.mutateWorkerStart(t)
		t.retryAfter, t.err = h.c.syncNode(h.ctx, node)
	})
}

func (h *harness) startStatus(node string) {
	delete(h.statusDirty, node)
	t := &thread{kind: threadStatus, node: node}
	h.start(t, func() {
		h.mutateWorkerStart(t)
		t.retryAfter, t.err = h.c.nodeStatus.Sync(h.ctx, node)
	})
}

func (h *harness) startChecker() {
	h.lastCheckStart = h.checkerInput()
	t := &thread{kind: threadChecker}
	h.start(t, func() {
		h.mutateChecker()
		h.c.expectations.Check(h.ctx)
	})
}

// checkerInput is what the expectation checker reads: the expectations and delete requests,
// and the VolumeAttachment store with its resourceVersion.
func (h *harness) checkerInput() string {
	var b strings.Builder
	b.WriteString(memoryCheckerDigest(h.c))
	keys := h.vas.ListKeys()
	sort.Strings(keys)
	for _, k := range keys {
		obj, _, _ := h.vas.GetByKey(k)
		b.WriteString(objLabel(obj) + " ")
	}
	b.WriteString(h.vas.rv)
	return b.String()
}

// finished does what processNextNode and processNextStatus do with a worker's result: an
// error retries the key (after a backoff: any later step), a retryAfter sets a timer.
func (h *harness) finished(t *thread) {
	for i, o := range h.threads {
		if o == t {
			h.threads = append(h.threads[:i], h.threads[i+1:]...)
			break
		}
	}
	if t.panic != "" {
		h.violate("panic", t.label()+" panicked: "+t.panic)
		return
	}
	dirty := h.nodeDirty
	if t.kind == threadStatus {
		dirty = h.statusDirty
	}
	switch {
	case t.kind == threadCreate:
		// creates.Queue.ProcessNext: a failed create retries its node's reconcile after a backoff
		// (any later step).
		if t.err != nil && t.createNode != "" {
			h.nodeDirty[t.createNode] = true
		}
	case t.kind == threadChecker:
		h.lastCheckEnd = h.checkerInput()
	case t.err != nil:
		dirty[t.node] = true
	case t.retryAfter > 0:
		h.timers = append(h.timers, timer{at: h.clk.Now().Add(t.retryAfter), queue: t.kind, node: t.node})
	}
}

// onCall is told about every call a worker sends, before it parks.
func (h *harness) onCall(t *thread, c *apiCall) {
	switch c.verb + " " + c.resource {
	case "create " + resVAs:
		h.inflightCreate[c.name] = c
		h.checkRedundantCreate(t, c)
	case "patch " + resNodes:
		// What the status sync decided on: it read the detaching marks right before the call.
		c.detaching = map[string]int{}
		for k := range memoryDetaching(h.c) {
			c.detaching[k] = h.detachEvidence[k]
		}
	}
}

// onReturn is told about every answer a worker gets.
func (h *harness) onReturn(t *thread, c *apiCall) {
	if c.resource == resVAs && (c.verb == "create" || c.verb == "get") && c.err != nil {
		h.ev.createFailed[c.name] = true
	}
	if c.verb == "get" && c.resource == resNodes && t.kind == threadReconcile {
		h.lastFreshRead[c.name] = t.freshReadStep
	}
}

// noteDetaching records, for each volume the controller newly marked detaching, the fresh
// Node read the decision was made on.
func (h *harness) noteDetaching() {
	cur := memoryDetaching(h.c)
	for k := range cur {
		if !h.prevDetaching[k] {
			node, _, _ := strings.Cut(k, "|")
			ev, ok := h.lastFreshRead[node]
			if !ok {
				ev = -1
			}
			h.detachEvidence[k] = ev
		}
	}
	for k := range h.detachEvidence {
		if !cur[k] {
			delete(h.detachEvidence, k)
		}
	}
	h.prevDetaching = cur
}

// stateKey identifies the schedule's state: the truth, the informers, the controller's
// memory, the queues, the timers and the workers in flight with what each has seen. Two
// schedules in the same state behave the same from there on.
func (h *harness) stateKey() uint64 {
	var b strings.Builder
	b.WriteString(h.api.dump())
	for _, res := range informerOrder {
		b.WriteString("\n" + h.informers[res].dump())
	}
	b.WriteString("\n" + memoryDigest(h.c))
	fmt.Fprintf(&b, "dirty %v %v\n", sortedKeys(h.nodeDirty), sortedKeys(h.statusDirty))
	for _, q := range h.creates {
		fmt.Fprintf(&b, "queued create %s read %v expected %v\n", q.name, sortedKeys(q.readSeen), sortedKeys(q.expected))
	}
	fmt.Fprintf(&b, "created %v clock %s\n", sortedKeys(h.created), h.clk.Now().Sub(interleaveStart))
	for _, tm := range h.timers {
		fmt.Fprintf(&b, "timer %s %s %s\n", tm.at.Sub(interleaveStart), tm.queue, tm.node)
	}
	for _, t := range h.threads {
		fmt.Fprintf(&b, "thread %s %s %s %s lock=%t released=%t %s\n", t.kind, t.node, t.va, t.where(), t.holdsStatusLock, t.releasedStatusLock, strings.Join(t.history, "|"))
		if t.kind == threadCreate {
			fmt.Fprintf(&b, "  decided on read %v expected %v\n", sortedKeys(t.readSeen), sortedKeys(t.readExpected))
		}
	}
	fmt.Fprintf(&b, "mounted %v\n", h.kubelet)
	// The invariants compare when a volume came into use with when adc read the node: keep
	// the order of those moments, not the step numbers.
	for _, k := range sortedKeys(map[string]bool(h.prevDetaching)) {
		fmt.Fprintf(&b, "detaching %s in-use-before-decision=%t\n", k, h.inUseBefore(k, h.detachEvidence[k]))
	}
	var used []string
	for k := range h.inUseSince {
		used = append(used, k)
	}
	sort.Strings(used)
	for _, t := range h.threads {
		if t.freshReadStep >= 0 {
			for _, k := range used {
				fmt.Fprintf(&b, "T%s %s in-use-before-read=%t\n", t.kind, k, h.inUseBefore(k, t.freshReadStep))
			}
		}
	}
	f := fnv.New64a()
	_, _ = f.Write([]byte(b.String()))
	return f.Sum64()
}

// inUseBefore reports whether node|volume k was in use at step (and has been since).
func (h *harness) inUseBefore(k string, step int) bool {
	since, ok := h.inUseSince[k]
	return ok && since <= step
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// podUses reports whether a pod in the truth on node uses the volume.
func (h *harness) podUses(node, pv string) bool {
	for _, p := range h.api.pods {
		if p.Spec.NodeName != node {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claimOfPV(pv) {
				return true
			}
		}
	}
	return false
}

// podUsesDisk reports whether a pod in the truth on node uses the disk (unique name), by any
// of its PersistentVolumes.
func (h *harness) podUsesDisk(node, unique string) bool {
	for _, pv := range h.w.pvsOf(unique) {
		if h.podUses(node, pv) {
			return true
		}
	}
	return false
}

func inUse(n *v1.Node, unique string) bool {
	for _, u := range n.Status.VolumesInUse {
		if string(u) == unique {
			return true
		}
	}
	return false
}

// The handler notifications a step delivered carry the object as client-go gives it.
func uidOfNote(n notification) (string, types.UID) {
	obj := n.cur
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if va, ok := cached.VAOf(obj); ok {
		return va.Name, va.UID
	}
	return "", ""
}
