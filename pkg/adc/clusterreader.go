package adc

import (
	"context"
	"errors"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// ClusterReader reads the cluster from the controller's informer caches, for the dashboard's
// explanations: a request then costs the API server nothing, however many people ask, and
// shows exactly what the controller decides from. The objects are the caches' trimmed forms,
// which keep everything a decision reads. It answers an error until the caches have synced:
// a partial cache would explain a volume with objects missing.
func (c *Controller) ClusterReader() plan.Reader { return cacheReader{c} }

// errNotSynced is what a cache read answers before the controller has started.
var errNotSynced = errors.New("the controller's caches have not synced yet; retry in a moment")

type cacheReader struct{ c *Controller }

var _ plan.Reader = cacheReader{}

func (r cacheReader) synced() error {
	if !r.c.HasSynced() {
		return errNotSynced
	}
	return nil
}

// inNamespace lists the store's entries of namespace (all when empty) by key, so that only
// those are rebuilt from their compact forms.
func inNamespace[T any](store cache.Indexer, namespace string, of func(interface{}) (*T, bool)) []T {
	var out []T
	for _, key := range store.ListKeys() {
		if namespace != "" && !strings.HasPrefix(key, namespace+"/") {
			continue
		}
		obj, ok, err := store.GetByKey(key)
		if err != nil || !ok {
			continue
		}
		if o, ok := of(obj); ok {
			out = append(out, *o)
		}
	}
	return out
}

// Pods implements plan.Reader.
func (r cacheReader) Pods(_ context.Context, namespace string, scheduledOnly bool) ([]v1.Pod, error) {
	if err := r.synced(); err != nil {
		return nil, err
	}
	pods := inNamespace(r.c.pods, namespace, cached.PodOf)
	if scheduledOnly {
		kept := pods[:0]
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				kept = append(kept, p)
			}
		}
		pods = kept
	}
	return pods, nil
}

// PersistentVolumeClaims implements plan.Reader.
func (r cacheReader) PersistentVolumeClaims(_ context.Context, namespace string) ([]v1.PersistentVolumeClaim, error) {
	if err := r.synced(); err != nil {
		return nil, err
	}
	return inNamespace(r.c.lookups.PVCs, namespace, cached.ClaimOf), nil
}

// PersistentVolumes implements plan.Reader.
func (r cacheReader) PersistentVolumes(_ context.Context, names []string) ([]v1.PersistentVolume, error) {
	if err := r.synced(); err != nil {
		return nil, err
	}
	if names == nil {
		return inNamespace(r.c.lookups.PVs, "", cached.PVOf), nil
	}
	var out []v1.PersistentVolume
	for _, name := range names {
		if pv := r.c.lookups.PersistentVolume(name); pv != nil {
			out = append(out, *pv)
		}
	}
	return out, nil
}

// ClusterObjects implements plan.Reader. The seed-API objects are those of the controller's
// own sources, which exist when its configuration reads them (cfg is the controller's).
func (r cacheReader) ClusterObjects(_ context.Context, cfg migration.Config, withAttachments bool) (plan.ClusterObjects, error) {
	var out plan.ClusterObjects
	if err := r.synced(); err != nil {
		return out, err
	}
	nodes, err := r.c.nodes.List(labels.Everything())
	if err != nil {
		return out, err
	}
	for _, n := range nodes {
		out.Objects.Nodes = append(out.Objects.Nodes, *n)
	}
	out.Objects.CSINodes = inNamespace(r.c.csiNodes, "", typed[storagev1.CSINode])
	out.Objects.CSIDrivers = inNamespace(r.c.lookups.Drivers, "", typed[storagev1.CSIDriver])
	if withAttachments {
		out.VolumeAttachments = inNamespace(r.c.vas, "", cached.VAOf)
	}
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		for _, info := range r.c.nodeInfos.List() {
			out.Objects.CSINodeInfos = append(out.Objects.CSINodeInfos, *info)
		}
	}
	if cfg.DriverSource.ReadsSeed() {
		for _, d := range r.c.seedDrivers.List() {
			out.Objects.SeedCSIDrivers = append(out.Objects.SeedCSIDrivers, *d)
		}
	}
	for _, p := range r.c.policySource.List() {
		out.DetachPolicies = append(out.DetachPolicies, *p)
	}
	return out, nil
}

// typed reads a store entry kept whole (no compact form).
func typed[T any](obj interface{}) (*T, bool) {
	t, ok := obj.(*T)
	return t, ok && t != nil
}
