package adc

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
)

// createQueueName names the queue of decided VolumeAttachment creates (workqueue metrics).
const createQueueName = "adc_create"

// createJob is one VolumeAttachment a node reconcile decided to create: its expectation is
// recorded (memory.ExpectCreate) and, for a ReadWriteOnce volume, its reservation taken
// before the job is queued, so nothing can decide a second attach of the volume while the
// job waits for a create worker.
type createJob struct {
	va        *storagev1.VolumeAttachment
	sourceKey string
	// pod and volume are for the log line of the create.
	pod    klog.ObjectRef
	volume string
}

// queueCreate hands a decided create to the create workers. The node reconcile does not
// wait for it: creates then flow at the rate the client budget and the API server allow
// (Options.CreatesInFlight of them at once, in the order they were decided, so a node's
// creates go together and nodes finish one after another), whatever the number of node
// workers and however long one create takes.
func (c *Controller) queueCreate(j createJob) {
	c.createsMu.Lock()
	c.createJobs[j.va.Name] = j
	c.createsMu.Unlock()
	c.createQueue.Add(j.va.Name)
}

// takeCreate removes and returns the queued create of a VolumeAttachment name, which is in
// flight from then on until answered.
func (c *Controller) takeCreate(name string) (createJob, bool) {
	c.createsMu.Lock()
	defer c.createsMu.Unlock()
	j, ok := c.createJobs[name]
	if ok {
		delete(c.createJobs, name)
		c.createsInFlight[name] = false
	}
	return j, ok
}

// answered ends the flight of a create; it returns whether a reconcile asked to be woken by
// its answer.
func (c *Controller) answered(name string) (wake bool) {
	c.createsMu.Lock()
	defer c.createsMu.Unlock()
	wake = c.createsInFlight[name]
	delete(c.createsInFlight, name)
	return wake
}

// unsentCreate is what a reconcile that no longer wants a VolumeAttachment finds of its
// create, when the create has no answer yet.
type unsentCreate int

const (
	// createAnswered: no create of the name is queued or in flight.
	createAnswered unsentCreate = iota
	// createCancelled: the create was still queued; it is dropped, never sent.
	createCancelled
	// createAwaited: the create is in flight; its answer wakes the node.
	createAwaited
)

// withdrawCreate is called by a node reconcile about to detach a VolumeAttachment it
// expects but has no answer for. A queued create is dropped with its expectation and
// reservation (nothing was sent, nothing is to detach); a create in flight is left to
// finish, and its answer wakes the node to detach what it made.
func (c *Controller) withdrawCreate(name string) unsentCreate {
	c.createsMu.Lock()
	j, queued := c.createJobs[name]
	if queued {
		delete(c.createJobs, name)
	} else if _, inFlight := c.createsInFlight[name]; inFlight {
		c.createsInFlight[name] = true
		c.createsMu.Unlock()
		return createAwaited
	}
	c.createsMu.Unlock()
	if !queued {
		return createAnswered
	}
	c.abortOp(name)
	for _, n := range c.mem.CreateFailed(j.va, j.sourceKey) {
		c.enqueueNode(n)
	}
	return createCancelled
}

func (c *Controller) runCreateWorker(ctx context.Context) {
	for c.processNextCreate(ctx) {
	}
}

// processNextCreate sends one queued create. A create that failed retries through its node's
// reconcile, after a per-VolumeAttachment backoff: the reconcile decides again (the pod may
// be gone, the volume attached elsewhere) rather than the create being resent as it was.
func (c *Controller) processNextCreate(ctx context.Context) bool {
	name, quit := c.createQueue.Get()
	if quit {
		return false
	}
	defer c.createQueue.Done(name)
	node, err := c.syncCreate(ctx, name)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Creating VolumeAttachment failed, will retry", "volumeAttachment", klog.KRef("", name), "node", node)
		c.nodeQueue.AddAfter(node, c.createRetries.When(name))
	default:
		c.createRetries.Forget(name)
	}
	return true
}

// syncCreate sends the queued create of the VolumeAttachment name and settles its
// expectation: stored (Created), refused (CreateFailed: the reservation goes and the nodes
// that waited for it are woken), or unknown (CreateUncertain: kept until the expectation
// checker reads the object). It returns the create's node and the create's error.
func (c *Controller) syncCreate(ctx context.Context, name string) (string, error) {
	j, ok := c.takeCreate(name)
	if !ok {
		return "", nil
	}
	node := j.va.Spec.NodeName
	if ctx.Err() != nil {
		// Shutting down: the create is not sent; nobody waits for it any more.
		c.abortOp(name)
		c.mem.CreateFailed(j.va, j.sourceKey)
		return node, nil
	}
	stored, err := c.attachments.Create(ctx, j.va)
	defer func() {
		if c.answered(name) {
			c.enqueueNode(node)
		}
	}()
	if err != nil {
		c.abortOp(name)
		if createMayHaveHappened(err) {
			// A timeout may come after the API server stored the object: keep the
			// expectation and its ReadWriteOnce reservation until a read says
			// (checkExpectations), or the informer shows it.
			c.mem.CreateUncertain(j.va, c.opts.Clock.Now())
		} else {
			for _, n := range c.mem.CreateFailed(j.va, j.sourceKey) {
				c.enqueueNode(n)
			}
		}
		c.noteCreateErr(name, err.Error())
		return node, fmt.Errorf("creating VolumeAttachment %s for node %s: %w", name, node, err)
	}
	c.noteCreateErr(name, "")
	if stored != nil {
		c.mem.Created(stored)
	}
	klog.FromContext(ctx).V(2).Info("Created VolumeAttachment", "volumeAttachment", klog.KRef("", name),
		"node", node, "pod", j.pod, "volume", j.volume, "driver", j.va.Spec.Attacher)
	return node, nil
}

// dropQueuedCreates forgets the creates no worker sent before the controller stopped, with
// their expectations and reservations.
func (c *Controller) dropQueuedCreates() {
	c.createsMu.Lock()
	jobs := c.createJobs
	c.createJobs = map[string]createJob{}
	c.createsInFlight = map[string]bool{}
	c.createsMu.Unlock()
	for name, j := range jobs {
		c.abortOp(name)
		c.mem.CreateFailed(j.va, j.sourceKey)
	}
}

// maxCreateErrs bounds the refusals kept for pair reasons: one per volume whose create keeps
// failing; past it (a cluster-wide outage) the oldest are not worth keeping apart from the log.
const maxCreateErrs = 4096

// noteCreateErr records the last refusal of a VolumeAttachment's create ("" once one
// succeeded), for the reason its pair shows on the dashboard while the create is retried.
func (c *Controller) noteCreateErr(name, msg string) {
	c.createsMu.Lock()
	defer c.createsMu.Unlock()
	if msg == "" {
		delete(c.createErrs, name)
		return
	}
	if len(c.createErrs) >= maxCreateErrs {
		clear(c.createErrs)
	}
	c.createErrs[name] = msg
}

// takeCreateErr returns the last refusal of a VolumeAttachment's create, or "", and forgets
// it: the retry that shows it queues the create again, whose answer records anew.
func (c *Controller) takeCreateErr(name string) string {
	c.createsMu.Lock()
	defer c.createsMu.Unlock()
	msg := c.createErrs[name]
	delete(c.createErrs, name)
	return msg
}
