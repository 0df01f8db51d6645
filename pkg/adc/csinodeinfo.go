package adc

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// csiNodeInfoSource reads the seed-API CSINodeInfo objects. The CRD is not built into
// Kubernetes and may be installed after adc starts (or never): until its informer has
// synced, every lookup answers "no object", which the engine turns into wait, so nothing is
// attached or detached on a guess and the controller never blocks on a missing CRD.
type csiNodeInfoSource struct {
	client   kubernetes.Interface
	dyn      dynamic.Interface
	poll     time.Duration
	onChange func(node string)

	mu      sync.RWMutex
	indexer cache.Indexer
}

func newCSINodeInfoSource(client kubernetes.Interface, dyn dynamic.Interface, poll time.Duration, onChange func(string)) *csiNodeInfoSource {
	return &csiNodeInfoSource{client: client, dyn: dyn, poll: poll, onChange: onChange}
}

// get returns the node's CSINodeInfo, or nil when there is none or the CRD is not served.
func (s *csiNodeInfoSource) get(name string) *csinodeinfo.CSINodeInfo {
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
	info, _ := obj.(*csinodeinfo.CSINodeInfo)
	return info
}

// run waits for the CRD to be served, then runs an informer for it until ctx ends.
func (s *csiNodeInfoSource) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", csinodeinfo.GroupVersionResource.String())
	logged := false
	_ = wait.PollUntilContextCancel(ctx, s.poll, true, func(ctx context.Context) (bool, error) {
		if s.served() {
			return true, nil
		}
		if !logged {
			logger.Info("CSINodeInfo CRD is not installed; pairs that need it are held until it is (install deploy/crds/)")
			logged = true
		}
		return false, nil
	})
	if ctx.Err() != nil {
		return
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, csinodeinfo.GroupVersionResource, "", 0, cache.Indexers{}, nil).Informer()
	// Convert once at cache time, so lookups on the hot path are typed and cheap.
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			info, err := csinodeinfo.FromUnstructured(u)
			if err != nil {
				// Kept unconverted: lookups then see no CSINodeInfo, so the node's pairs wait
				// instead of being decided on a guess.
				logger.Error(err, "Malformed CSINodeInfo; its node is treated as not having reported", "csiNodeInfo", u.GetName())
				return u, nil
			}
			return info, nil
		}
		return obj, nil
	}); err != nil {
		logger.Error(err, "Setting CSINodeInfo transform")
	}
	notify := func(obj interface{}) {
		if o, ok := unwrapTombstone(obj).(interface{ GetName() string }); ok {
			s.onChange(o.GetName())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, cur interface{}) { notify(cur) },
		DeleteFunc: notify,
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, inf.HasSynced) {
		return
	}
	s.mu.Lock()
	s.indexer = inf.GetIndexer()
	s.mu.Unlock()
	logger.Info("Reading node migration state from CSINodeInfo objects")
	for _, key := range inf.GetIndexer().ListKeys() {
		s.onChange(key)
	}
}

func (s *csiNodeInfoSource) served() bool {
	list, err := s.client.Discovery().ServerResourcesForGroupVersion(csinodeinfo.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == csinodeinfo.CsiNodeInfoResourcePlural {
			return true
		}
	}
	return false
}
