// Package creates is adc's create queue: the VolumeAttachment creates node reconciles
// decided, sent by workers of their own. It exists so that creates are not limited by how
// many nodes reconcile at once: a reconcile decides (taking the ReadWriteOnce reservation
// and recording the create expectation in memory) and queues; the queue's workers send, as
// fast as the client budget and the API server allow, and settle each answer in memory. The
// Queue owns the decided jobs, the creates in flight and the backoff of the names whose
// create failed, under its lock.
package creates

import (
	"context"
	"fmt"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// QueueName names the queue of decided VolumeAttachment creates (workqueue metrics).
const QueueName = "adc_create"

// Job is one VolumeAttachment a node reconcile decided to create: its expectation is
// recorded (attachstate.ExpectCreate) and, for a ReadWriteOnce volume, its reservation taken
// before the job is queued, so nothing can decide a second attach of the volume while the
// job waits for a worker.
type Job struct {
	VA *storagev1.VolumeAttachment
	// Volume is the volume's unique name, memory's key of its reservation.
	Volume string
	// Pod and PodVolume (the pod's name for the volume) are for the log line of the create.
	Pod       klog.ObjectRef
	PodVolume string
}

// Memory is what the queue settles in adc's memory (attachstate.State): a create stored,
// refused (the reservation goes; it returns the nodes that waited for it), or unknown.
type Memory interface {
	Created(stored *storagev1.VolumeAttachment)
	CreateFailed(va *storagev1.VolumeAttachment, volume string) []string
	CreateUncertain(va *storagev1.VolumeAttachment, now time.Time)
}

// Options are what the queue sends through and settles in.
type Options struct {
	Writer volumeattach.AttachmentWriter
	Memory Memory
	// Abort forgets the attach operation of a create that was never made (report.Operations).
	Abort func(vaName string)
	// Wake queues a node for reconcile at once, Retry after a delay (a failed create is
	// decided again by its node's reconcile, not resent as it was).
	Wake  func(node string)
	Retry func(node string, after time.Duration)
	Clock clock.WithTicker
	// InitialBackoff and MaxBackoff time the backoff of a name whose create failed: no create
	// of it is sent before InitialBackoff after the first failure, the wait doubling per
	// failure up to MaxBackoff. Zero: DefaultInitialBackoff, DefaultMaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
}

// Queue holds the decided creates and sends them from Work.
type Queue struct {
	opts Options
	// queue holds the names of the queued creates; one that ProcessNext found backing off
	// is added again when its backoff is over.
	queue workqueue.TypedDelayingInterface[string]

	mu sync.Mutex
	// jobs holds each queued create and inFlight each one sent and not yet answered (true:
	// a reconcile waits for its answer).
	jobs     map[string]Job
	inFlight map[string]bool
	// refusals is the backoff and last failure of each name whose last create failed, until
	// a create of it succeeds, its queued create is withdrawn, or nothing decided it again
	// for MaxBackoff after its backoff was over (sweepLocked, at most once per nextSweep).
	refusals  map[string]*refusal
	nextSweep time.Time
}

// New returns an empty queue.
func New(opts Options) *Queue {
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	return &Queue{
		opts: opts,
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name: QueueName, Clock: opts.Clock}),
		jobs:     map[string]Job{},
		inFlight: map[string]bool{},
		refusals: map[string]*refusal{},
	}
}

// Add hands a decided create to the workers. The node reconcile does not wait for it:
// creates then flow at the rate the client budget and the API server allow (as many at once
// as there are workers, in the order they were decided, so a node's creates go together and
// nodes finish one after another), whatever the number of node workers and however long one
// create takes.
//
// A create of a name whose last create failed is not sent before the name's backoff is over
// (ProcessNext): a node reconcile decides it again on every event of the node, and an API
// server that refuses it (an admission webhook, a quota) would otherwise get it at that
// rate. Adding it again while it waits changes nothing: it is not sent earlier, and the
// backoff goes on as it was.
func (q *Queue) Add(j Job) {
	q.mu.Lock()
	q.jobs[j.VA.Name] = j
	q.sweepLocked(q.opts.Clock.Now())
	q.mu.Unlock()
	q.queue.Add(j.VA.Name)
}

// Len, Get, Done and ShutDown are the work queue's, of VolumeAttachment names: a worker (or
// a test playing one) gets a name, sends its create (Send) and is done with it. A name whose
// backoff ProcessNext found not over is out of Len until it is.
func (q *Queue) Len() int                      { return q.queue.Len() }
func (q *Queue) Get() (name string, quit bool) { return q.queue.Get() }
func (q *Queue) Done(name string)              { q.queue.Done(name) }
func (q *Queue) ShutDown()                     { q.queue.ShutDown() }

// Queued returns the create of a name that waits for a worker, if any.
func (q *Queue) Queued(name string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[name]
	return j, ok
}

// take removes and returns the queued create of a name, which is in flight from then on
// until answered.
func (q *Queue) take(name string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[name]
	if ok {
		delete(q.jobs, name)
		q.inFlight[name] = false
	}
	return j, ok
}

// answered ends the flight of a create; it returns whether a reconcile asked to be woken by
// its answer.
func (q *Queue) answered(name string) (wake bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	wake = q.inFlight[name]
	delete(q.inFlight, name)
	return wake
}

// Unsent is what a reconcile that no longer wants a VolumeAttachment finds of its create,
// when the create has no answer yet.
type Unsent int

const (
	// Answered: no create of the name is queued or in flight.
	Answered Unsent = iota
	// Cancelled: the create was still queued; it is dropped, never sent.
	Cancelled
	// Awaited: the create is in flight; its answer wakes the node.
	Awaited
)

// Withdraw is called by a node reconcile about to detach a VolumeAttachment it expects but
// has no answer for. A queued create is dropped with its expectation and reservation
// (nothing was sent, nothing is to detach); a create in flight is left to finish, and its
// answer wakes the node to detach what it made.
func (q *Queue) Withdraw(name string) Unsent {
	q.mu.Lock()
	j, queued := q.jobs[name]
	if queued {
		delete(q.jobs, name)
		delete(q.refusals, name)
	} else if _, inFlight := q.inFlight[name]; inFlight {
		q.inFlight[name] = true
		q.mu.Unlock()
		return Awaited
	}
	q.mu.Unlock()
	if !queued {
		return Answered
	}
	q.opts.Abort(name)
	q.wake(q.opts.Memory.CreateFailed(j.VA, j.Volume))
	return Cancelled
}

// Work sends queued creates until the queue shuts down.
func (q *Queue) Work(ctx context.Context) {
	for q.ProcessNext(ctx) {
	}
}

// ProcessNext sends one queued create, once its name's backoff is over. A create that failed
// retries through its node's reconcile, after the name's backoff: the reconcile decides again
// (the pod may be gone, the volume attached elsewhere) rather than the create being resent as
// it was; a create decided again before the backoff is over waits for the rest of it.
func (q *Queue) ProcessNext(ctx context.Context) bool {
	name, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(name)
	q.mu.Lock()
	wait := q.waitLocked(name, q.opts.Clock.Now())
	q.mu.Unlock()
	if wait > 0 {
		// Decided again while its name backs off: it waits for the rest of the backoff.
		q.queue.AddAfter(name, wait)
		return true
	}
	node, retryAfter, err := q.send(ctx, name)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Creating VolumeAttachment failed, will retry", "volumeAttachment", klog.KRef("", name),
			"node", node, "retryAfter", retryAfter)
		q.opts.Retry(node, retryAfter)
	}
	return true
}

// Send sends the queued create of the VolumeAttachment name, whatever its backoff, and
// settles its expectation: stored (Created), refused (CreateFailed: the reservation goes and
// the nodes that waited for it are woken), or unknown (CreateUncertain: kept until the
// expectation checker reads the object). It returns the create's node and the create's error.
func (q *Queue) Send(ctx context.Context, name string) (string, error) {
	node, _, err := q.send(ctx, name)
	return node, err
}

// send is Send; a failed create also returns the name's backoff, when its node is to decide
// it again.
func (q *Queue) send(ctx context.Context, name string) (node string, retryAfter time.Duration, err error) {
	j, ok := q.take(name)
	if !ok {
		return "", 0, nil
	}
	node = j.VA.Spec.NodeName
	if ctx.Err() != nil {
		// Shutting down: the create is not sent; nobody waits for it any more.
		q.opts.Abort(name)
		q.opts.Memory.CreateFailed(j.VA, j.Volume)
		return node, 0, nil
	}
	stored, err := q.opts.Writer.Create(ctx, j.VA)
	defer func() {
		if q.answered(name) {
			q.wake([]string{node})
		}
	}()
	if err != nil {
		// The backoff first: a reconcile woken by the settling below decides the create
		// again, and a worker must find the name backing off.
		q.mu.Lock()
		retryAfter = q.refusedLocked(name, err.Error(), q.opts.Clock.Now())
		q.mu.Unlock()
		q.opts.Abort(name)
		if mayHaveHappened(err) {
			// A timeout may come after the API server stored the object: keep the
			// expectation and its ReadWriteOnce reservation until a read says (the
			// expectation checker), or the informer shows it.
			q.opts.Memory.CreateUncertain(j.VA, q.opts.Clock.Now())
		} else {
			q.wake(q.opts.Memory.CreateFailed(j.VA, j.Volume))
		}
		return node, retryAfter, fmt.Errorf("creating VolumeAttachment %s for node %s: %w", name, node, err)
	}
	q.mu.Lock()
	delete(q.refusals, name)
	q.mu.Unlock()
	if stored != nil {
		q.opts.Memory.Created(stored)
	}
	klog.FromContext(ctx).V(2).Info("Created VolumeAttachment", "volumeAttachment", klog.KRef("", name),
		"node", node, "pod", j.Pod, "volume", j.PodVolume, "driver", j.VA.Spec.Attacher)
	return node, 0, nil
}

// DropQueued forgets the creates no worker sent before the controller stopped, with their
// expectations and reservations.
func (q *Queue) DropQueued() {
	q.mu.Lock()
	jobs := q.jobs
	q.jobs = map[string]Job{}
	q.inFlight = map[string]bool{}
	q.mu.Unlock()
	for name, j := range jobs {
		q.opts.Abort(name)
		q.opts.Memory.CreateFailed(j.VA, j.Volume)
	}
}

func (q *Queue) wake(nodes []string) {
	for _, n := range nodes {
		if n != "" {
			q.opts.Wake(n)
		}
	}
}

// mayHaveHappened reports whether a failed create may have been stored anyway: every error
// but an answer of the API server that it refused the request.
func mayHaveHappened(err error) bool {
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonForbidden, metav1.StatusReasonUnauthorized, metav1.StatusReasonInvalid,
		metav1.StatusReasonBadRequest, metav1.StatusReasonNotFound, metav1.StatusReasonConflict,
		metav1.StatusReasonTooManyRequests, metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable,
		metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonGone,
		metav1.StatusReasonAlreadyExists:
		return false
	}
	return true
}

// TakeErr returns the last failure of a VolumeAttachment's create, or "", and forgets it
// (not the name's backoff): the retry that shows it queues the create again, whose answer
// records anew.
func (q *Queue) TakeErr(name string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.refusals[name]
	if r == nil {
		return ""
	}
	msg := r.msg
	r.msg = ""
	return msg
}
