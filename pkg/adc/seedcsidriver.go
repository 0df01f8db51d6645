package adc

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
)

// seedDriverSource reads the seed-API CSIDriver objects (csi.storage.k8s.io/v1alpha1) for
// --driver-info-source=seed or auto. The CRD is not built into Kubernetes and may be installed
// after adc starts, or never: while it is not served every lookup answers "no object", which
// the engine turns into "attach required", exactly as the issue specifies for a cluster
// without the CRD. When the CRD is served at start, start does not return before the
// informer has synced, so a restart never attaches a volume the seed object says needs no
// attach just because its cache was still empty.
type seedDriverSource struct {
	client   kubernetes.Interface
	dyn      dynamic.Interface
	poll     time.Duration
	onChange func()

	mu      sync.RWMutex
	indexer cache.Indexer
}

func newSeedDriverSource(client kubernetes.Interface, dyn dynamic.Interface, poll time.Duration, onChange func()) *seedDriverSource {
	return &seedDriverSource{client: client, dyn: dyn, poll: poll, onChange: onChange}
}

// get returns the seed CSIDriver named name, or nil when there is none or the CRD is not
// served (yet).
func (s *seedDriverSource) get(name string) *seedcsidriver.CSIDriver {
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
	d, _ := obj.(*seedcsidriver.CSIDriver)
	return d
}

// start finds out whether the CRD is served. If it is, it runs the informer and returns once
// it has synced (or ctx ended); if it is not, it says so once in the log and keeps looking in
// the background, starting the informer when the CRD appears. Discovery errors other than
// "not found" are retried: only a definite answer lets the controller act without the cache.
func (s *seedDriverSource) start(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", seedcsidriver.GroupVersionResource.String())
	var served bool
	_ = wait.PollUntilContextCancel(ctx, s.poll, true, func(ctx context.Context) (bool, error) {
		ok, err := s.served()
		if err != nil {
			logger.Error(err, "Looking up whether the seed CSIDriver CRD is served failed, will retry")
			return false, nil
		}
		served = ok
		return true, nil
	})
	if ctx.Err() != nil {
		return
	}
	if served {
		s.run(ctx, logger)
		return
	}
	logger.Info("Seed CSIDriver CRD is not installed: every CSI driver without a storage.k8s.io/v1 CSIDriver counts as having no CSIDriver object (attach required) until it is; install deploy/crds/ if your drivers declare attachRequired in csi.storage.k8s.io/v1alpha1")
	go func() {
		_ = wait.PollUntilContextCancel(ctx, s.poll, false, func(context.Context) (bool, error) {
			ok, _ := s.served()
			return ok, nil
		})
		if ctx.Err() == nil {
			s.run(ctx, logger)
		}
	}()
}

// run starts the informer, waits for its cache and then makes lookups use it, re-deciding
// every node so that pairs decided without the seed objects are decided again with them.
func (s *seedDriverSource) run(ctx context.Context, logger klog.Logger) {
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, seedcsidriver.GroupVersionResource, "", 0, cache.Indexers{}, nil).Informer()
	// Convert once at cache time, so lookups on the hot path are typed and cheap.
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		d, err := seedcsidriver.FromUnstructured(u)
		if err != nil {
			// Kept unconverted: lookups then see no seed CSIDriver, so the driver's volumes
			// are attached (the safe side: an unneeded attach, never a missing one).
			logger.Error(err, "Malformed seed CSIDriver; its driver is treated as having no seed CSIDriver (attach required)", "csiDriver", u.GetName())
			return u, nil
		}
		return d, nil
	}); err != nil {
		logger.Error(err, "Setting the seed CSIDriver transform")
	}
	// Any change can switch pairs of any node between csi and csi-no-attach; such changes are
	// rare, so every node is re-decided, as for storage.k8s.io/v1 CSIDrivers.
	notify := func(interface{}) { s.onChange() }
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
	logger.Info("Reading attachRequired from seed CSIDriver objects", "objects", len(inf.GetIndexer().ListKeys()))
	s.onChange()
}

// served reports whether the API server serves the seed CSIDriver resource. A group version
// that does not exist is a definite "no"; other errors are returned for the caller to retry.
func (s *seedDriverSource) served() (bool, error) {
	list, err := s.client.Discovery().ServerResourcesForGroupVersion(seedcsidriver.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == seedcsidriver.Resource {
			return true, nil
		}
	}
	return false, nil
}
