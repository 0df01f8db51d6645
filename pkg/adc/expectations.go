package adc

import (
	"context"
	"sort"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
)

// Expectations bridge the time between a VolumeAttachment write and the moment the informer
// shows it. They are tied to the object's observed lifecycle, never to a clock alone:
//
//   - a create expectation carries the object the API server stored (UID, resourceVersion). It
//     ends when the informer shows that object (or its deletion), or when the informer's store
//     has synced past the object's resourceVersion without holding it: then the object was
//     created and deleted while the watch was away (a gap, a relist after 410 Gone), and no
//     event will ever say so.
//   - a delete expectation is keyed by UID and set before the Delete call, so an informer
//     delete event that arrives before the call returns ends it, and a VolumeAttachment
//     re-created under the same name is a new object, never "deleting".
//   - a ReadWriteOnce reservation lives only as long as the create expectation it guards.

// expectedVA is a VolumeAttachment adc created (or is creating) that the informer has not
// shown yet.
type expectedVA struct {
	// va is the object as sent until the create returns, then as stored.
	va *storagev1.VolumeAttachment
	// stored is set once the create returned: va has its UID and resourceVersion.
	stored bool
	since  time.Time
	// verified is when the expectation was last confirmed by a GET, in the fallback used when
	// the informer store does not expose its resourceVersion.
	verified time.Time
	// uncertain: the create failed in a way that does not say whether the object was stored
	// (a timeout); the checker reads it.
	uncertain bool
	// node and sourceKey are the object's node and volume source key (vaExpectations' index).
	node, sourceKey string
}

// deleteRequest is a VolumeAttachment delete adc sent.
type deleteRequest struct {
	uid types.UID
	at  time.Time
}

// expectationTTL is how long an expectation is trusted without proof in the fallback mode
// (an informer store without a resourceVersion); after it adc reads the object once to check.
const expectationTTL = time.Minute

// expectVA records a create about to be sent.
func (c *Controller) expectVA(va *storagev1.VolumeAttachment, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.world.expectedVAs.add(&expectedVA{va: va, since: now})
}

// createdVA records what the API server stored for an expected create. When the informer
// store already holds that very object, the create is observed now (observeLocked), so the
// expectation ends with the object in vaSources whether or not the handler has run.
func (c *Controller) createdVA(stored *storagev1.VolumeAttachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.world.expectedVAs.get(stored.Name)
	if e == nil || e.stored {
		return
	}
	e.va, e.stored = stored, true
	if obj, ok, _ := c.vas.GetByKey(stored.Name); ok {
		if va, isVA := vaOf(obj); isVA && va.UID == stored.UID {
			c.observeLocked(va)
		}
	}
}

// unexpectVA forgets a create that failed and the reservation made for it, and returns the
// nodes that waited for that reservation: they may attach the volume now.
func (c *Controller) unexpectVA(va *storagev1.VolumeAttachment, sourceKey string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.world.expectedVAs.remove(va.Name)
	if c.world.reservations[sourceKey] == va.Spec.NodeName {
		delete(c.world.reservations, sourceKey)
		return c.takeWaitersLocked(sourceKey)
	}
	return nil
}

// uncertainVA keeps the expectation of a create whose answer did not say whether the object
// was stored (a timeout, a lost connection): the checker reads the object (checkUncertain).
func (c *Controller) uncertainVA(va *storagev1.VolumeAttachment, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.world.expectedVAs.get(va.Name); e != nil && !e.stored {
		e.uncertain, e.since = true, now
	}
}

// createMayHaveHappened reports whether a failed create may have been stored anyway: every
// error but an answer of the API server that it refused the request.
func createMayHaveHappened(err error) bool {
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

// checkUncertain reads the object of an uncertain create: stored (the expectation continues
// as any stored one), or not there (it ends, with its reservation, and waiting nodes wake).
// A failed read leaves it for the next check.
func (c *Controller) checkUncertain(ctx context.Context, e *expectedVA) []string {
	va, err := c.client.StorageV1().VolumeAttachments().Get(ctx, e.va.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Reading a VolumeAttachment whose create timed out failed; will retry", "volumeAttachment", klog.KObj(e.va), "err", err)
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.world.expectedVAs.get(e.va.Name)
	if cur == nil || cur.stored || !cur.uncertain {
		return nil
	}
	if err == nil && va.Spec.NodeName == cur.va.Spec.NodeName {
		cur.va, cur.stored, cur.uncertain = va, true, false
		return nil
	}
	c.dropExpectationLocked(cur)
	return append(c.takeWaitersLocked(vaSourceKey(cur.va)), cur.va.Spec.NodeName)
}

// requestDelete records a delete about to be sent, before it is sent: the informer's delete
// event may come before the call returns.
func (c *Controller) requestDelete(va *storagev1.VolumeAttachment, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.world.deleteRequested[va.Name] = deleteRequest{uid: va.UID, at: now}
}

// cancelDelete forgets a delete that failed.
func (c *Controller) cancelDelete(va *storagev1.VolumeAttachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.world.deleteRequested[va.Name]; ok && r.uid == va.UID {
		delete(c.world.deleteRequested, va.Name)
	}
}

// deleteRequestedLocked reports whether adc sent the delete of this very object.
func (c *Controller) deleteRequestedLocked(va *storagev1.VolumeAttachment) bool {
	r, ok := c.world.deleteRequested[va.Name]
	return ok && va.UID != "" && r.uid == va.UID
}

// observedVA is called by the VolumeAttachment informer: the cache now has it. It reports
// whether the object is the one adc created and was waiting to see (its create returned with
// this UID).
func (c *Controller) observedVA(va *storagev1.VolumeAttachment) (created bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observeLocked(va)
}

// observeLocked records evidence that va exists: the informer's handler delivered it, or the
// informer's store holds it (client-go updates the store before it calls the handlers). In
// one step the object enters vaSources and the create expectation of that very object (same
// UID) ends, so the ReadWriteOnce check always finds it in one of the two. An expectation of
// another object under the name ends only when va is newer than it (a replacement); an older
// object, or one seen before adc's create returned, leaves it pending.
func (c *Controller) observeLocked(va *storagev1.VolumeAttachment) (created bool) {
	c.world.vaSources.add(va)
	if e := c.world.expectedVAs.get(va.Name); e != nil && e.stored {
		switch {
		case e.va.UID != "" && e.va.UID == va.UID:
			created = true
			c.dropExpectationLocked(e)
		case newerThan(va, e.va):
			c.dropExpectationLocked(e)
		}
	}
	if key := vaSourceKey(va); key != "" && c.world.reservations[key] == va.Spec.NodeName {
		delete(c.world.reservations, key)
	}
	if r, ok := c.world.deleteRequested[va.Name]; ok && r.uid != va.UID {
		// A new object under the old name: the old one's delete is over.
		delete(c.world.deleteRequested, va.Name)
	}
	return created
}

// newerThan reports whether a's resourceVersion is known to be later than b's.
func newerThan(a, b *storagev1.VolumeAttachment) bool {
	cmp, err := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
	return err == nil && cmp > 0
}

// goneVA is called when the informer shows a VolumeAttachment deleted; it returns the nodes
// that waited for that volume to leave its node.
func (c *Controller) goneVA(va *storagev1.VolumeAttachment) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.world.vaSources.remove(va)
	if r, ok := c.world.deleteRequested[va.Name]; ok && (r.uid == va.UID || va.UID == "") {
		delete(c.world.deleteRequested, va.Name)
	}
	if e := c.world.expectedVAs.get(va.Name); e != nil && e.stored && (e.va.UID == va.UID || va.UID == "") {
		c.dropExpectationLocked(e)
	}
	return c.takeWaitersLocked(vaSourceKey(va))
}

// dropExpectationLocked ends a create expectation and the reservation it guarded.
func (c *Controller) dropExpectationLocked(e *expectedVA) {
	c.world.expectedVAs.remove(e.va.Name)
	if key := vaSourceKey(e.va); key != "" && c.world.reservations[key] == e.va.Spec.NodeName {
		delete(c.world.reservations, key)
	}
}

// expectationVerdict is what checkExpectations concluded about one create expectation.
type expectationVerdict int

const (
	expectationPending expectationVerdict = iota
	// expectationSeen: the store holds the object; it is observed from the store.
	expectationSeen
	// expectationGone: the object was deleted (or replaced) without adc's informer showing it.
	expectationGone
)

// checkExpectations ends the expectations that the informer store proves over. It runs
// every ExpectationCheckInterval while expectations are pending; it reads only memory, except
// in the fallback for a store without a resourceVersion, where an expectation older than
// expectationTTL is checked with one GET.
func (c *Controller) checkExpectations(ctx context.Context) {
	c.mu.Lock()
	var pending, uncertain []*expectedVA
	for _, e := range c.world.expectedVAs.byName {
		switch {
		case e.stored:
			cp := *e
			pending = append(pending, &cp)
		case e.uncertain:
			cp := *e
			uncertain = append(uncertain, &cp)
		}
	}
	var deletes []string
	for name := range c.world.deleteRequested {
		deletes = append(deletes, name)
	}
	c.mu.Unlock()
	if len(pending) == 0 && len(deletes) == 0 && len(uncertain) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	now := c.opts.Clock.Now()
	storeRV := c.vas.LastStoreSyncResourceVersion()
	var wake []string
	// In name order: one checker run reads the same objects in the same order every time.
	sort.Slice(uncertain, func(i, j int) bool { return uncertain[i].va.Name < uncertain[j].va.Name })
	for _, e := range uncertain {
		wake = append(wake, c.checkUncertain(ctx, e)...)
	}
	for _, e := range pending {
		verdict := c.judgeExpectation(ctx, e, storeRV, now)
		if verdict == expectationPending {
			continue
		}
		c.mu.Lock()
		cur := c.world.expectedVAs.get(e.va.Name)
		if cur == nil || !cur.stored || cur.va.UID != e.va.UID {
			c.mu.Unlock()
			continue
		}
		if verdict == expectationSeen {
			// The store holds it; its handler may not have run. Observe it from the store
			// (read again under the lock): never end the expectation without the object in
			// vaSources, or a second node could get the ReadWriteOnce volume meanwhile.
			if obj, ok, _ := c.vas.GetByKey(e.va.Name); ok {
				if va, isVA := vaOf(obj); isVA && va.UID == cur.va.UID {
					c.observeLocked(va)
				}
			}
			c.mu.Unlock()
			continue
		}
		c.dropExpectationLocked(cur)
		if verdict == expectationGone {
			wake = append(wake, c.takeWaitersLocked(vaSourceKey(e.va))...)
			wake = append(wake, e.va.Spec.NodeName)
			delete(c.world.attaching, e.va.Name)
		}
		c.mu.Unlock()
		if verdict == expectationGone {
			logger.V(2).Info("VolumeAttachment was deleted while the informer did not watch; forgetting its expectation",
				"volumeAttachment", klog.KObj(e.va), "createdResourceVersion", e.va.ResourceVersion, "storeResourceVersion", storeRV)
		}
	}
	for _, name := range deletes {
		c.pruneDeleteRequest(name)
	}
	for _, n := range wake {
		c.enqueueNode(n)
	}
}

// judgeExpectation decides one stored create expectation against the informer store.
func (c *Controller) judgeExpectation(ctx context.Context, e *expectedVA, storeRV string, now time.Time) expectationVerdict {
	if obj, ok, _ := c.vas.GetByKey(e.va.Name); ok {
		va, isVA := vaOf(obj)
		if !isVA {
			return expectationPending
		}
		if va.UID == e.va.UID {
			return expectationSeen
		}
		// Another object under the name: a replacement if the store's copy is newer.
		if cmp, err := resourceversion.CompareResourceVersion(va.ResourceVersion, e.va.ResourceVersion); err == nil && cmp > 0 {
			return expectationGone
		}
		return expectationPending
	}
	if cmp, err := resourceversion.CompareResourceVersion(storeRV, e.va.ResourceVersion); err == nil {
		// The store has applied every event up to storeRV; had the object still existed at
		// storeRV, the store would hold it.
		if cmp >= 0 {
			return expectationGone
		}
		return expectationPending
	}
	// Fallback: no comparable resourceVersion. Trust the expectation for a while, then check.
	if now.Sub(e.since) < expectationTTL || now.Sub(e.verified) < expectationTTL {
		return expectationPending
	}
	va, err := c.client.StorageV1().VolumeAttachments().Get(ctx, e.va.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), err == nil && va.UID != e.va.UID:
		return expectationGone
	case err == nil:
		c.mu.Lock()
		if cur := c.world.expectedVAs.get(e.va.Name); cur != nil {
			cur.verified = now
		}
		c.mu.Unlock()
	}
	return expectationPending
}

// pruneDeleteRequest forgets a delete request once neither the store nor a create
// expectation holds the object it was for: nothing can be judged by it any more.
func (c *Controller) pruneDeleteRequest(name string) {
	obj, inStore, _ := c.vas.GetByKey(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.world.deleteRequested[name]
	if !ok {
		return
	}
	if va, isVA := vaOf(obj); inStore && isVA && va.UID == r.uid {
		return
	}
	if e := c.world.expectedVAs.get(name); e != nil && e.stored && e.va.UID == r.uid {
		return
	}
	delete(c.world.deleteRequested, name)
}
