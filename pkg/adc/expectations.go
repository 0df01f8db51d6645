package adc

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
)

// The create expectations and delete requests live in memory (see its expectations.go for
// when they end); this file is the checker that ends the ones the informer will never end.

// expectationTTL is how long an expectation is trusted without proof in the fallback mode
// (an informer store without a resourceVersion); after it adc reads the object once to check.
const expectationTTL = time.Minute

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

// checkUncertain reads the object of an uncertain create and tells memory what it found. A
// failed read leaves it for the next check.
func (c *Controller) checkUncertain(ctx context.Context, e memory.Expectation) []string {
	va, err := c.client.StorageV1().VolumeAttachments().Get(ctx, e.VA.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Reading a VolumeAttachment whose create timed out failed; will retry", "volumeAttachment", klog.KObj(e.VA), "err", err)
		return nil
	}
	if err != nil {
		va = nil
	}
	return c.mem.ResolveUncertain(e.VA.Name, va)
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
// every ExpectationCheckInterval while expectations are pending; it reads only memory and the
// store, except for creates whose answer was lost (one GET each) and in the fallback for a
// store without a resourceVersion, where an expectation older than expectationTTL is checked
// with one GET.
func (c *Controller) checkExpectations(ctx context.Context) {
	stored, uncertain, deletes := c.mem.CheckerWork()
	if len(stored) == 0 && len(deletes) == 0 && len(uncertain) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	now := c.opts.Clock.Now()
	storeRV := c.vas.LastStoreSyncResourceVersion()
	var wake []string
	for _, e := range uncertain {
		wake = append(wake, c.checkUncertain(ctx, e)...)
	}
	for _, e := range stored {
		switch c.judgeExpectation(ctx, e, storeRV, now) {
		case expectationSeen:
			// The store holds it; its handler may not have run. Memory observes it from the
			// store (read again under its lock): never ends the expectation without the
			// object in the sources, or a second node could get the volume meanwhile.
			c.mem.ObserveFromStore(e.VA.Name, e.VA.UID)
		case expectationGone:
			ended, nodes := c.mem.ExpectationGone(e.VA.Name, e.VA.UID)
			if !ended {
				continue
			}
			wake = append(wake, nodes...)
			c.pending.Abort(e.VA.Name)
			logger.V(2).Info("VolumeAttachment was deleted while the informer did not watch; forgetting its expectation",
				"volumeAttachment", klog.KObj(e.VA), "createdResourceVersion", e.VA.ResourceVersion, "storeResourceVersion", storeRV)
		}
	}
	for _, name := range deletes {
		c.mem.PruneDeleteRequest(name)
	}
	for _, n := range wake {
		c.enqueueNode(n)
	}
}

// judgeExpectation decides one stored create expectation against the informer store.
func (c *Controller) judgeExpectation(ctx context.Context, e memory.Expectation, storeRV string, now time.Time) expectationVerdict {
	if obj, ok, _ := c.vas.GetByKey(e.VA.Name); ok {
		va, isVA := cached.VAOf(obj)
		if !isVA {
			return expectationPending
		}
		if va.UID == e.VA.UID {
			return expectationSeen
		}
		// Another object under the name: a replacement if the store's copy is newer.
		if cmp, err := resourceversion.CompareResourceVersion(va.ResourceVersion, e.VA.ResourceVersion); err == nil && cmp > 0 {
			return expectationGone
		}
		return expectationPending
	}
	if cmp, err := resourceversion.CompareResourceVersion(storeRV, e.VA.ResourceVersion); err == nil {
		// The store has applied every event up to storeRV; had the object still existed at
		// storeRV, the store would hold it.
		if cmp >= 0 {
			return expectationGone
		}
		return expectationPending
	}
	// Fallback: no comparable resourceVersion. Trust the expectation for a while, then check.
	if now.Sub(e.Since) < expectationTTL || now.Sub(e.Verified) < expectationTTL {
		return expectationPending
	}
	va, err := c.client.StorageV1().VolumeAttachments().Get(ctx, e.VA.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), err == nil && va.UID != e.VA.UID:
		return expectationGone
	case err == nil:
		c.mem.ExpectationVerified(e.VA.Name, now)
	}
	return expectationPending
}
