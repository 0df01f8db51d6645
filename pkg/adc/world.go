package adc

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// world is the controller's memory between reconciles: what it cannot read back from the
// informer caches, or cannot read back yet. Everything else is derived from the caches on
// every reconcile, so a restart loses nothing that matters. Guarded by Controller.mu.
type world struct {
	// inTree holds in-tree attachments per node, by unique name. In-tree attachments have no
	// API object; they are learned from Node status.volumesAttached (learnInTreeLocked), kept
	// up to date by the attacher calls and checked with VolumesAreAttached every
	// InTreeVerifyPeriod (inTreeVerified: when each node was last checked).
	inTree         map[string]map[string]inTreeAttachment
	inTreeVerified map[string]time.Time
	// inTreeForgotten are, per node, in-tree attachments adc dropped (detached, or reported
	// detached by the attacher) that node status may still list; they are not learned again
	// from it, and leave once status no longer lists them.
	inTreeForgotten map[string]map[string]bool
	// managed is, per node adc has seen, whether it carries the managed annotation; a deleted
	// node's VolumeAttachments are detached only if adc managed it. Entries of deleted nodes
	// go once they have no attachment left.
	managed map[string]bool
	// detaching holds, per node, the unique names being removed from status.volumesAttached
	// before their detach; a volume is detached only once the node no longer lists it.
	detaching map[string]map[string]bool
	// expectedVAs are VolumeAttachments created but not yet seen by the informer, so a
	// reconcile in between neither creates them again nor misses them in checks (see
	// expectations.go for when they end).
	expectedVAs vaExpectations
	// vaSources are the VolumeAttachments the informer shows, by volume source key.
	vaSources vaSources
	// deleteRequested are VolumeAttachments whose delete was sent, by name, for the UID the
	// delete was for, to not send it twice.
	deleteRequested map[string]deleteRequest
	// reservations hold a ReadWriteOnce volume for the node whose attach is in flight, so two
	// workers never attach it to two nodes at once. Key: volume source key.
	reservations map[string]string
	// waiters are nodes whose pods wait for a ReadWriteOnce volume to leave another node.
	waiters map[string]map[string]bool
	// held tracks the backoff of pairs held in wait or error, per node.
	held map[string]map[pairKey]*heldPair
	// events remembers, per node, the last Event message per pod (or the node) and reason, to
	// emit one Event per pod and reason instead of one per retry. A node's entries that its
	// last reconcile did not renew are dropped, so deleted pods leave nothing behind.
	events map[string]map[eventKey]string
	// creating counts, per node, CSI attaches decided in the running reconcile and not yet
	// created; with not-yet-attached VolumeAttachments they make the node's status pending.
	creating map[string]int
	// unlistedSince is when the oldest attached-but-unlisted volume of a node was first seen
	// by the status worker, to bound how long coalescing may delay it.
	unlistedSince map[string]time.Time
	// written is, per node, the status.volumesAttached adc wrote last, kept until the Node
	// informer shows that write.
	written map[string]writtenStatus
	// attaching and detachingOps are CSI operations under way, by VolumeAttachment name,
	// ended by the informer for the recent-operations list and metrics.
	attaching    map[string]*pendingOp
	detachingOps map[string]*pendingOp
}

type inTreeAttachment struct {
	volume     InTreeVolume
	devicePath string
}

type pairKey struct{ node, pod, volume string }

type eventKey struct{ pod, reason string }

type heldPair struct {
	reason    string
	retries   int
	nextRetry time.Time
	backoff   *backoff.ExponentialBackOff
}

func newWorld() *world {
	return &world{
		inTree:          map[string]map[string]inTreeAttachment{},
		inTreeVerified:  map[string]time.Time{},
		inTreeForgotten: map[string]map[string]bool{},
		managed:         map[string]bool{},
		detaching:       map[string]map[string]bool{},
		expectedVAs:     newVAExpectations(),
		vaSources:       newVASources(),
		deleteRequested: map[string]deleteRequest{},
		reservations:    map[string]string{},
		waiters:         map[string]map[string]bool{},
		held:            map[string]map[pairKey]*heldPair{},
		events:          map[string]map[eventKey]string{},
		creating:        map[string]int{},
		unlistedSince:   map[string]time.Time{},
		written:         map[string]writtenStatus{},
		attaching:       map[string]*pendingOp{},
		detachingOps:    map[string]*pendingOp{},
	}
}

func (c *Controller) takeWaitersLocked(key string) []string {
	if key == "" {
		return nil
	}
	var nodes []string
	for n := range c.world.waiters[key] {
		nodes = append(nodes, n)
	}
	delete(c.world.waiters, key)
	return nodes
}

func (c *Controller) newBackoff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     c.opts.Backoff.InitialInterval,
		RandomizationFactor: c.opts.Backoff.RandomizationFactor,
		Multiplier:          c.opts.Backoff.Multiplier,
		MaxInterval:         c.opts.Backoff.MaxInterval,
		MaxElapsedTime:      0, // held pairs are retried for as long as they are held
		Stop:                backoff.Stop,
		Clock:               clockAdapter{c.opts.Clock},
	}
	b.Reset()
	return b
}

// hold records that a pair is held and returns its retry count and next retry time. The
// backoff advances only when a scheduled retry is due, not on every event that re-decides
// the node.
func (c *Controller) hold(key pairKey, reason string, now time.Time) (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.world.held[key.node][key]
	if h == nil {
		h = &heldPair{backoff: c.newBackoff()}
		h.nextRetry = now.Add(h.backoff.NextBackOff())
		if c.world.held[key.node] == nil {
			c.world.held[key.node] = map[pairKey]*heldPair{}
		}
		c.world.held[key.node][key] = h
	} else if !now.Before(h.nextRetry) {
		h.retries++
		h.nextRetry = now.Add(h.backoff.NextBackOff())
	}
	h.reason = reason
	return h.retries, h.nextRetry
}

// forgetNodeMemory drops the backoff and Event memory of the node that its last reconcile
// did not renew (pairs no longer held, conditions cleared, pods gone), so a pair held again
// later starts a fresh backoff and gets a fresh Event, and nothing outlives its pod.
func (c *Controller) forgetNodeMemory(node string, held map[pairKey]bool, events map[eventKey]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.world.held[node] {
		if !held[k] {
			delete(c.world.held[node], k)
		}
	}
	if len(c.world.held[node]) == 0 {
		delete(c.world.held, node)
	}
	for k := range c.world.events[node] {
		if !events[k] {
			delete(c.world.events[node], k)
		}
	}
	if len(c.world.events[node]) == 0 {
		delete(c.world.events, node)
	}
}

type clockAdapter struct{ c interface{ Now() time.Time } }

func (a clockAdapter) Now() time.Time { return a.c.Now() }
