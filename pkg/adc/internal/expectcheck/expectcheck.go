// Package expectcheck ends the create expectations and delete requests in adc's memory that
// the informer never will. Memory ends an expectation when the VolumeAttachment informer
// delivers its object or its delete; after a watch gap or a relist no event may say either,
// and a create whose answer was lost says nothing at all. The Checker runs on a timer, apart
// from the reconcile, and reads only memory and the informer store, except for one GET per
// lost answer and, for a store without a resourceVersion, per expectation older than a
// minute. It keeps no state of its own: what it judges is memory's.
package expectcheck

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// ttl is how long an expectation is trusted without proof in the fallback mode (an informer
// store without a resourceVersion); after it the checker reads the object once to check.
const ttl = time.Minute

// Store is the VolumeAttachment informer store, with the resourceVersion it has synced to.
type Store interface {
	GetByKey(key string) (item interface{}, exists bool, err error)
	LastStoreSyncResourceVersion() string
}

// Options are what the checker reads and tells.
type Options struct {
	Memory *attachstate.State
	Store  Store
	Client kubernetes.Interface
	Clock  clock.PassiveClock
	// Abort forgets the attach operation of a create that turned out gone (report.Operations).
	Abort func(vaName string)
	// Wake queues a node for reconcile: its actual state changed, or it waited for a volume.
	Wake func(node string)
}

// Checker ends the expectations the informer store proves over; Check runs it once.
type Checker struct{ opts Options }

// New returns a checker.
func New(opts Options) *Checker { return &Checker{opts: opts} }

// verdict is what Check concluded about one create expectation.
type verdict int

const (
	pending verdict = iota
	// seen: the store holds the object; it is observed from the store.
	seen
	// gone: the object was deleted (or replaced) without adc's informer showing it.
	gone
)

// Check ends the expectations that the informer store proves over. The controller runs it
// every ExpectationCheckInterval; it reads only memory and the store, except for creates
// whose answer was lost (one GET each) and in the fallback for a store without a
// resourceVersion, where an expectation older than ttl is checked with one GET.
func (c *Checker) Check(ctx context.Context) {
	mem := c.opts.Memory
	stored, uncertain, deletes := mem.CheckerWork()
	if len(stored) == 0 && len(deletes) == 0 && len(uncertain) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	now := c.opts.Clock.Now()
	storeRV := c.opts.Store.LastStoreSyncResourceVersion()
	var wake []string
	for _, e := range uncertain {
		wake = append(wake, c.checkUncertain(ctx, e)...)
	}
	for _, e := range stored {
		switch c.judge(ctx, e, storeRV, now) {
		case seen:
			// The store holds it; its handler may not have run. Memory observes it from the
			// store (read again under its lock): never ends the expectation without the
			// object in the sources, or a second node could get the volume meanwhile.
			mem.ObserveFromStore(e.VA.Name, e.VA.UID)
		case gone:
			ended, nodes := mem.ExpectationGone(e.VA.Name, e.VA.UID)
			if !ended {
				continue
			}
			wake = append(wake, nodes...)
			c.opts.Abort(e.VA.Name)
			logger.V(2).Info("VolumeAttachment was deleted while the informer did not watch; forgetting its expectation",
				"volumeAttachment", klog.KObj(e.VA), "createdResourceVersion", e.VA.ResourceVersion, "storeResourceVersion", storeRV)
		}
	}
	for _, name := range deletes {
		mem.PruneDeleteRequest(name)
	}
	for _, n := range wake {
		if n != "" {
			c.opts.Wake(n)
		}
	}
}

// checkUncertain reads the object of an uncertain create and tells memory what it found. A
// failed read leaves it for the next check.
func (c *Checker) checkUncertain(ctx context.Context, e attachstate.Expectation) []string {
	va, err := c.opts.Client.StorageV1().VolumeAttachments().Get(ctx, e.VA.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Reading a VolumeAttachment whose create timed out failed; will retry", "volumeAttachment", klog.KObj(e.VA), "err", err)
		return nil
	}
	if err != nil {
		va = nil
	}
	return c.opts.Memory.ResolveUncertain(e.VA.Name, va)
}

// judge decides one stored create expectation against the informer store.
func (c *Checker) judge(ctx context.Context, e attachstate.Expectation, storeRV string, now time.Time) verdict {
	if obj, ok, _ := c.opts.Store.GetByKey(e.VA.Name); ok {
		va, isVA := cached.VAOf(obj)
		if !isVA {
			return pending
		}
		if va.UID == e.VA.UID {
			return seen
		}
		// Another object under the name: a replacement if the store's copy is newer.
		if cmp, err := resourceversion.CompareResourceVersion(va.ResourceVersion, e.VA.ResourceVersion); err == nil && cmp > 0 {
			return gone
		}
		return pending
	}
	if cmp, err := resourceversion.CompareResourceVersion(storeRV, e.VA.ResourceVersion); err == nil {
		// The store has applied every event up to storeRV; had the object still existed at
		// storeRV, the store would hold it.
		if cmp >= 0 {
			return gone
		}
		return pending
	}
	// Fallback: no comparable resourceVersion. Trust the expectation for a while, then check.
	if now.Sub(e.Since) < ttl || now.Sub(e.Verified) < ttl {
		return pending
	}
	va, err := c.opts.Client.StorageV1().VolumeAttachments().Get(ctx, e.VA.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), err == nil && va.UID != e.VA.UID:
		return gone
	case err == nil:
		c.opts.Memory.ExpectationVerified(e.VA.Name, now)
	}
	return pending
}
