package seedapi

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
)

// PolicySource reads adc's DetachPolicy objects (adc.migration-aware.io/v1alpha1), an
// optional CRD like the seed APIs: not installed, or not readable with adc's RBAC, every
// volume gets the built-in rule (upstream's behaviour), and the source keeps looking. When
// the CRD is served and readable at start, Start returns only once the informer has synced,
// so a restart never applies the built-in rule to a volume a policy holds just because the
// cache was still empty.
type PolicySource struct {
	crdSource[detachv1alpha1.DetachPolicy]
	poll     time.Duration
	onChange func()
	// loggedMissing and loggedForbidden say each "no" once; only Start's goroutine sets them.
	loggedMissing, loggedForbidden bool
}

// NewPolicySource returns a source that calls onChange after every change of any policy.
func NewPolicySource(client kubernetes.Interface, dyn dynamic.Interface, poll time.Duration, onChange func()) *PolicySource {
	return &PolicySource{
		crdSource: crdSource[detachv1alpha1.DetachPolicy]{client: client, dyn: dyn, gvr: detachv1alpha1.GroupVersionResource, convert: detachv1alpha1.FromUnstructured},
		poll:      poll, onChange: onChange,
	}
}

// List returns every cached policy (none before the informer has synced). A malformed
// object, kept unconverted by the informer, is left out: the built-in or default rule
// applies to what it would have selected.
func (s *PolicySource) List() []*detachv1alpha1.DetachPolicy {
	if s == nil {
		return nil
	}
	return s.crdSource.list()
}

// Get returns the cached policy named name, or nil.
func (s *PolicySource) Get(name string) *detachv1alpha1.DetachPolicy {
	if s == nil {
		return nil
	}
	return s.crdSource.get(name)
}

// Start finds out whether the CRD is served and readable. If it is, it runs the informer and
// returns once it has synced (or ctx ended); if not, it says so once in the log and keeps
// looking in the background.
func (s *PolicySource) Start(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", detachv1alpha1.GroupVersionResource.String())
	var ready bool
	_ = wait.PollUntilContextCancel(ctx, s.poll, true, func(ctx context.Context) (bool, error) {
		ok, err := s.readable(ctx)
		if err != nil {
			logger.Error(err, "Looking up whether DetachPolicies can be read failed, will retry")
			return false, nil
		}
		ready = ok
		return true, nil
	})
	if ctx.Err() != nil {
		return
	}
	if ready {
		s.run(ctx, logger)
		return
	}
	go func() {
		_ = wait.PollUntilContextCancel(ctx, s.poll, false, func(ctx context.Context) (bool, error) {
			ok, _ := s.readable(ctx)
			return ok, nil
		})
		if ctx.Err() == nil {
			s.run(ctx, logger)
		}
	}()
}

// readable reports whether the CRD is served and adc may list it. Not served, or forbidden,
// is a definite no (logged once each), so the controller runs with the built-in rule rather
// than waiting on a cache that cannot fill.
func (s *PolicySource) readable(ctx context.Context) (bool, error) {
	served, err := s.served()
	if err != nil || !served {
		if err == nil && !s.loggedMissing {
			s.loggedMissing = true
			klog.FromContext(ctx).Info("DetachPolicy CRD is not installed: the built-in detach rule applies to every volume (install deploy/crds/ to use policies)")
		}
		return false, err
	}
	_, err = s.dyn.Resource(s.gvr).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsForbidden(err):
		if !s.loggedForbidden {
			s.loggedForbidden = true
			klog.FromContext(ctx).Error(err, "adc may not list DetachPolicies: the built-in detach rule applies to every volume until it may; grant list and watch on detachpolicies.adc.migration-aware.io (deploy/kubernetes/rbac.yaml, deploy/kube-controller-manager/seed-api-rbac.yaml)")
		}
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// run starts the informer, waits for its cache and then makes List use it.
func (s *PolicySource) run(ctx context.Context, logger klog.Logger) {
	if !s.runInformer(ctx, logger, "Malformed DetachPolicy; it is ignored and the default or built-in rule applies to its volumes",
		func(interface{}) { s.onChange() }) {
		return
	}
	logger.Info("Reading DetachPolicies", "objects", len(s.keys()))
	s.onChange()
}
