package volumeattach

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients are the clients of one adc instance, sharing one budget of qps and burst in which
// node status writes go first (PrioritizedBudget). `adc controller` and adc inside
// kube-controller-manager build them the same way.
type Clients struct {
	// Client makes every request but node status writes; Dynamic reads the seed-API CRDs.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// NodeStatus writes node status.volumesAttached through the priority client.
	NodeStatus *ClientStatusWriter
	// Budget is the shared limiter, for adc.Options.APIBudget.
	Budget *PriorityLimiter
}

// NewClients builds the clients of one adc instance from cfg; qps and burst are the whole
// budget.
func NewClients(cfg *rest.Config, qps float32, burst int) (*Clients, error) {
	normal, priority, budget := PrioritizedBudget(cfg, qps, burst)
	client, err := kubernetes.NewForConfig(normal)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	statusClient, err := kubernetes.NewForConfig(priority)
	if err != nil {
		return nil, fmt.Errorf("building the node status client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(normal)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return &Clients{Client: client, Dynamic: dyn, NodeStatus: &ClientStatusWriter{Client: statusClient}, Budget: budget}, nil
}
