// Package seedapi reads objects of APIs served by CRDs that may be installed after adc starts,
// or never: the seed APIs' CSINodeInfo and CSIDriver (csi.storage.k8s.io/v1alpha1) and adc's
// DetachPolicy. Each source is a typed, read-only cache that waits for its CRD and tells the
// controller when its objects change.
package seedapi

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// crdSource is a typed, read-only cache of one seed-API resource served by a CRD that may be
// installed after adc starts, or never. Until its informer has synced, get answers "no
// object"; each source decides what that means (CSINodeInfo: hold; seed CSIDriver: attach).
type crdSource[T any] struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	gvr    schema.GroupVersionResource
	// convert turns a cached object into the typed one.
	convert func(*unstructured.Unstructured) (*T, error)

	mu      sync.RWMutex
	indexer cache.Indexer
}

// get returns the object named name, or nil when there is none, it is malformed, or the
// informer has not synced (or the CRD is not served).
func (s *crdSource[T]) get(name string) *T {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	idx := s.indexer
	s.mu.RUnlock()
	if idx == nil {
		return nil
	}
	obj, ok, err := idx.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	typed, _ := obj.(*T)
	return typed
}

// served reports whether the API server serves the resource. A group version that does not
// exist is a definite "no"; other errors are returned for the caller to retry or treat as no.
func (s *crdSource[T]) served() (bool, error) {
	list, err := s.client.Discovery().ServerResourcesForGroupVersion(s.gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == s.gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// runInformer starts the resource's informer, converting objects once at cache time (so
// lookups on the hot path are typed and cheap) and calling onEvent for every change. It
// returns once the cache has synced and lookups use it, false if ctx ended first. A malformed
// object is kept unconverted and logged with malformed: lookups then see no object.
func (s *crdSource[T]) runInformer(ctx context.Context, logger klog.Logger, malformed string, onEvent func(obj interface{})) bool {
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, s.gvr, "", 0, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		typed, err := s.convert(u)
		if err != nil {
			logger.Error(err, malformed, "name", u.GetName())
			return u, nil
		}
		return typed, nil
	}); err != nil {
		logger.Error(err, "Setting the informer transform", "resource", s.gvr.String())
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onEvent,
		UpdateFunc: func(_, cur interface{}) { onEvent(cur) },
		DeleteFunc: onEvent,
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, inf.HasSynced) {
		return false
	}
	s.mu.Lock()
	s.indexer = inf.GetIndexer()
	s.mu.Unlock()
	return true
}

// keys lists the cached objects' names (empty before the informer has synced).
func (s *crdSource[T]) keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.indexer == nil {
		return nil
	}
	return s.indexer.ListKeys()
}

// list returns every cached object (none before the informer has synced). A malformed
// object, kept unconverted by the informer, is left out, as get leaves it out.
func (s *crdSource[T]) list() []*T {
	var out []*T
	for _, k := range s.keys() {
		if o := s.get(k); o != nil {
			out = append(out, o)
		}
	}
	return out
}
