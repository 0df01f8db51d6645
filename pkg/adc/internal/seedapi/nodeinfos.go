package seedapi

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// NodeInfoSource reads the seed-API CSINodeInfo objects. The CRD is not built into
// Kubernetes and may be installed after adc starts (or never): until its informer has
// synced, every lookup answers "no object", which the engine turns into wait, so nothing is
// attached or detached on a guess and the controller never blocks on a missing CRD.
type NodeInfoSource struct {
	crdSource[csinodeinfo.CSINodeInfo]
	poll     time.Duration
	onChange func(node string)
}

func NewNodeInfoSource(client kubernetes.Interface, dyn dynamic.Interface, poll time.Duration, onChange func(string)) *NodeInfoSource {
	return &NodeInfoSource{
		crdSource: crdSource[csinodeinfo.CSINodeInfo]{client: client, dyn: dyn, gvr: csinodeinfo.GroupVersionResource, convert: csinodeinfo.FromUnstructured},
		poll:      poll, onChange: onChange,
	}
}

// Get returns the node's CSINodeInfo, or nil when there is none or the CRD is not served.
func (s *NodeInfoSource) Get(name string) *csinodeinfo.CSINodeInfo {
	if s == nil {
		return nil
	}
	return s.crdSource.get(name)
}

// List returns every cached CSINodeInfo (none before the informer has synced), for the
// dashboard's explanations, which read the controller's caches.
func (s *NodeInfoSource) List() []*csinodeinfo.CSINodeInfo {
	if s == nil {
		return nil
	}
	return s.crdSource.list()
}

// Run waits for the CRD to be served, then runs an informer for it until ctx ends.
func (s *NodeInfoSource) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", csinodeinfo.GroupVersionResource.String())
	logged := false
	_ = wait.PollUntilContextCancel(ctx, s.poll, true, func(ctx context.Context) (bool, error) {
		if ok, _ := s.served(); ok {
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
	notify := func(obj interface{}) {
		if o, ok := cached.UnwrapTombstone(obj).(interface{ GetName() string }); ok {
			s.onChange(o.GetName())
		}
	}
	// A malformed CSINodeInfo stays unconverted: lookups see none, so the node's pairs wait
	// instead of being decided on a guess.
	if !s.runInformer(ctx, logger, "Malformed CSINodeInfo; its node is treated as not having reported", notify) {
		return
	}
	logger.Info("Reading node migration state from CSINodeInfo objects")
	for _, key := range s.keys() {
		s.onChange(key)
	}
}
