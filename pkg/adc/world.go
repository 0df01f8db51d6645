package adc

import (
	"time"

	"github.com/cenkalti/backoff/v4"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/expectcheck"
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// adc's memory between reconciles lives in package memory (pkg/adc/internal/memory), behind
// its own lock, changed only through its operations; its invariants are stated and checked
// there. The names below are the controller's views of its types.

// pairKey names a pair the controller may hold; eventKey the Events of one pod and reason.
type (
	pairKey  = memory.PairKey
	eventKey = memory.EventKey
)

// stores is what memory and the expectation checker read of the controller's informer
// stores. It reads c.vas at each call: tests replace the store after New.
type stores struct{ c *Controller }

var (
	_ memory.Store               = stores{}
	_ migration.PVIdentityLookup = stores{}
	_ expectcheck.Store          = stores{}
)

func (s stores) GetByKey(key string) (interface{}, bool, error) { return s.c.vas.GetByKey(key) }

func (s stores) LastStoreSyncResourceVersion() string { return s.c.vas.LastStoreSyncResourceVersion() }

func (s stores) VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool) {
	obj, ok, _ := s.c.vas.GetByKey(name)
	if !ok {
		return nil, false
	}
	return cached.VAOf(obj)
}

func (s stores) VolumeAttachmentsOnNode(node string) []*storagev1.VolumeAttachment {
	objs, _ := s.c.vas.ByIndex(byNodeIndex, node)
	out := make([]*storagev1.VolumeAttachment, 0, len(objs))
	for _, obj := range objs {
		if va, ok := cached.VAOf(obj); ok {
			out = append(out, va)
		}
	}
	return out
}

// PVCSIIdentity names a PersistentVolume's volume from the informer cache, for memory.
func (s stores) PVCSIIdentity(name string) (driver, handle string, ok bool) {
	if s.c.lookups.PVs == nil {
		return "", "", false
	}
	return s.c.lookups.PVCSIIdentity(name)
}

func (s stores) NodeKnown(node string) bool {
	_, err := s.c.nodes.Get(node)
	return err == nil
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

type clockAdapter struct{ c interface{ Now() time.Time } }

func (a clockAdapter) Now() time.Time { return a.c.Now() }
