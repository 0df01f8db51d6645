package kcm

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// Identity is the controller identity adc asks kube-controller-manager's client builder for:
// the built-in attach/detach controller's, so that with --use-service-account-credentials adc
// runs as ServiceAccount kube-system/attachdetach-controller, bound by the bootstrap policy to
// ClusterRole system:controller:attachdetach-controller, which grants what adc needs with the
// default node and driver sources. The two controllers never run together.
const Identity = "attachdetach-controller"

// Host is what kube-controller-manager hands adc's constructor.
type Host struct {
	// Factory is kube-controller-manager's shared informer factory
	// (ControllerContext.InformerFactory); the host starts it after building every controller.
	Factory informers.SharedInformerFactory
	// Config is adc's client configuration from kube-controller-manager's client builder
	// (ControllerContext.NewClientConfig(Identity)): its credentials follow
	// --use-service-account-credentials, its QPS and burst --kube-api-qps and --kube-api-burst.
	Config *rest.Config
	// InTree attaches in-tree volumes with kube-controller-manager's attachable plugins; nil
	// holds in-tree volumes with a Warning Event.
	InTree adc.InTreeAttacher
}

// NewController builds adc for kube-controller-manager with the options of f. adc gets a
// client budget of its own, like every kube-controller-manager controller, in which its node
// status writes go first; its metrics are registered in the legacy registry, which
// kube-controller-manager serves on /metrics (adc_* and upstream's attach/detach names,
// recording into the host's storage_operation_duration_seconds). Like any controller
// constructor it only registers informers; the host starts them and calls Run.
func NewController(ctx context.Context, h Host, f *Flags) (*Embedded, error) {
	if h.Config == nil || f == nil {
		return nil, errors.New("adc in kube-controller-manager needs a client configuration and its flags")
	}
	opts := f.Options()
	opts.InTreeAttacher = h.InTree
	qps, burst := h.Config.QPS, h.Config.Burst
	if qps <= 0 || burst <= 0 {
		qps, burst = rest.DefaultQPS, rest.DefaultBurst
	}
	clients, err := volumeattach.NewClients(h.Config, qps, burst)
	if err != nil {
		return nil, fmt.Errorf("adc's clients: %w", err)
	}
	opts.NodeStatus, opts.APIBudget = clients.NodeStatus, clients.Budget
	m, err := metrics.Legacy()
	if err != nil {
		return nil, fmt.Errorf("registering adc's metrics in kube-controller-manager's registry: %w", err)
	}
	opts.Observer = m
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("adc options: %w", err)
	}
	embedded, err := NewEmbedded(ctx, h.Factory, clients.Client, clients.Dynamic, opts, f.Workers())
	if err != nil {
		return nil, err
	}
	// kube-controller-manager builds its controllers once per process (it exits when it loses
	// the leader election), so the state metrics describe this controller for good.
	m.SetSource(func() rollout.ControllerView { return embedded.Controller() })
	return embedded, nil
}
