package adc

import (
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/expectcheck"
	"github.com/migration-aware/adc/pkg/migration"
)

// The controller's informer stores as its parts read them: the by-node index it adds to the
// pod and VolumeAttachment informers, and stores, what memory and the expectation checker
// read of them.
//
// adc's memory between reconciles lives in package attachstate (pkg/adc/internal/attachstate), behind
// its own lock, changed only through its operations; its invariants are stated and checked
// there. The names below are the controller's views of its types.

// pairKey names a pair the controller may hold; eventKey the Events of one pod and reason.
type (
	pairKey  = attachstate.PairKey
	eventKey = attachstate.EventKey
)

// stores is what memory and the expectation checker read of the controller's informer
// stores. It reads c.vas at each call: tests replace the store after New.
type stores struct{ c *Controller }

var (
	_ attachstate.Store          = stores{}
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

// byNodeIndex is the index adc adds to the pod informer (the pods scheduled to a node: the
// node's desired state) and to the VolumeAttachment informer (the CSI part of its actual
// state), under one name: one index per informer, keyed by spec.nodeName.
const byNodeIndex = "adc.spec.nodeName"

func addIndexers(pods, vas cache.SharedIndexInformer) error {
	if err := pods.AddIndexers(cache.Indexers{
		byNodeIndex: podNodeName,
	}); err != nil {
		return fmt.Errorf("adding pod indexers: %w", err)
	}
	if err := vas.AddIndexers(cache.Indexers{
		byNodeIndex: vaNodeName,
	}); err != nil {
		return fmt.Errorf("adding VolumeAttachment indexers: %w", err)
	}
	return nil
}

func podNodeName(obj interface{}) ([]string, error) {
	p, ok := cached.PlacementOf(obj)
	if !ok || p.Node == "" {
		return nil, nil
	}
	return []string{p.Node}, nil
}

func vaNodeName(obj interface{}) ([]string, error) {
	if node, ok := cached.VANodeName(obj); ok {
		return []string{node}, nil
	}
	return nil, nil
}
