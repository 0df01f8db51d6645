package seedapi

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
)

// DriverSource reads the seed-API CSIDriver objects (csi.storage.k8s.io/v1alpha1) for
// --driver-info-source=seed or auto. The CRD is not built into Kubernetes and may be installed
// after adc starts, or never: while it is not served every lookup answers "no object", which
// the engine turns into "attach required", the rule for a cluster without the CRD (see
// migration.DriverAttachRequired). When the CRD is served at start, start does not return
// before the informer has synced, so a restart never attaches a volume the seed object says
// needs no attach just because its cache was still empty.
type DriverSource struct {
	crdSource[seedcsidriver.CSIDriver]
	poll     time.Duration
	onChange func()
}

func NewDriverSource(client kubernetes.Interface, dyn dynamic.Interface, poll time.Duration, onChange func()) *DriverSource {
	return &DriverSource{
		crdSource: crdSource[seedcsidriver.CSIDriver]{client: client, dyn: dyn, gvr: seedcsidriver.GroupVersionResource, convert: seedcsidriver.FromUnstructured},
		poll:      poll, onChange: onChange,
	}
}

// Get returns the seed CSIDriver named name, or nil when there is none or the CRD is not
// served (yet).
func (s *DriverSource) Get(name string) *seedcsidriver.CSIDriver {
	if s == nil {
		return nil
	}
	return s.crdSource.get(name)
}

// List returns every cached seed CSIDriver (none before the informer has synced), for the
// dashboard's explanations, which read the controller's caches.
func (s *DriverSource) List() []*seedcsidriver.CSIDriver {
	if s == nil {
		return nil
	}
	return s.crdSource.list()
}

// Start finds out whether the CRD is served. If it is, it runs the informer and returns once
// it has synced (or ctx ended); if it is not, it says so once in the log and keeps looking in
// the background, starting the informer when the CRD appears. Discovery errors other than
// "not found" are retried: only a definite answer lets the controller act without the cache.
func (s *DriverSource) Start(ctx context.Context) {
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
// Any change can switch pairs of any node between csi and csi-no-attach; such changes are
// rare, so every node is re-decided, as for storage.k8s.io/v1 CSIDrivers. A malformed seed
// CSIDriver stays unconverted: lookups see none, so its driver's volumes are attached (the
// safe side: an unneeded attach, never a missing one).
func (s *DriverSource) run(ctx context.Context, logger klog.Logger) {
	if !s.runInformer(ctx, logger, "Malformed seed CSIDriver; its driver is treated as having no seed CSIDriver (attach required)",
		func(interface{}) { s.onChange() }) {
		return
	}
	logger.Info("Reading attachRequired from seed CSIDriver objects", "objects", len(s.keys()))
	s.onChange()
}
