package kcm

import (
	"context"
	"errors"
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/controller-manager/controller"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc"
)

// Embedded is adc as a controller of a controller manager such as kube-controller-manager:
// it satisfies k8s.io/controller-manager's controller.Interface and HealthCheckable, and
// kube-controller-manager's own Controller interface (Name and Run(ctx)), so a descriptor's
// constructor can return it as it is. Create it with NewEmbedded (or NewController, from flags).
type Embedded struct {
	ctrl    *adc.Controller
	workers int
}

var (
	_ controller.Interface       = &Embedded{}
	_ controller.HealthCheckable = &Embedded{}
	// kube-controller-manager's app.Controller, which cannot be imported from here.
	_ interface {
		Name() string
		Run(context.Context)
	} = &Embedded{}
)

// NewEmbedded builds adc on the host's shared informer factory, the way a
// kube-controller-manager controller constructor does: it only registers informers,
// indexers and event handlers. It does NOT start the factory; the host starts it once every
// controller is built, as kube-controller-manager does. client should be a client of its own
// (kube-controller-manager: ControllerContext.NewClient), dyn may be nil when
// opts.Migration.NodeSource is csinode and opts.Migration.DriverSource is csidriver, and
// workers is the number of nodes reconciled in parallel (values below 1 mean 1).
func NewEmbedded(ctx context.Context, factory informers.SharedInformerFactory, client kubernetes.Interface, dyn dynamic.Interface, opts adc.Options, workers int) (*Embedded, error) {
	if factory == nil || client == nil {
		return nil, errors.New("adc needs the host's shared informer factory and a client")
	}
	ctrl, err := adc.New(client, dyn, factory, opts)
	if err != nil {
		return nil, err
	}
	if workers < 1 {
		workers = 1
	}
	klog.FromContext(ctx).V(2).Info("Registered the migration-aware attach/detach controller's informers on the host's factory",
		"workers", workers, "migration", opts.Migration.String(), "inTreeAttacher", opts.InTreeAttacher != nil)
	return &Embedded{ctrl: ctrl, workers: workers}, nil
}

// Name implements controller.Interface.
func (e *Embedded) Name() string { return adc.ControllerManagerName }

// Run waits for the caches of the host-started factory, then reconciles until ctx ends, and
// returns after its workers have stopped (kube-controller-manager's contract for Run).
func (e *Embedded) Run(ctx context.Context) { e.ctrl.Run(ctx, e.workers) }

// HealthChecker implements controller.HealthCheckable: the check fails until adc's informer
// caches have synced and its workers have started, and passes after that.
func (e *Embedded) HealthChecker() controllerhealthz.UnnamedHealthChecker {
	return syncedCheck{e.ctrl}
}

// Controller returns the underlying controller, for hosts that serve its snapshot (the
// rollout dashboard) or read its state.
func (e *Embedded) Controller() *adc.Controller { return e.ctrl }

// syncedCheck is the health check of an embedded adc.
type syncedCheck struct{ ctrl *adc.Controller }

func (c syncedCheck) Check(*http.Request) error {
	if !c.ctrl.HasSynced() {
		return errors.New("adc: informer caches not synced yet (is the host's shared informer factory started?)")
	}
	return nil
}
