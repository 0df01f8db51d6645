package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"

	"github.com/migration-aware/adc/test/testinformers"
)

// MachineState is what the test cloud says of a node's machine, as a cloud provider's
// instance API says it of a VM.
type MachineState string

// The states of a machine.
const (
	// MachineRunning is a machine that runs (its kubelet may still be dead: a partition, a
	// crash). Every node's machine starts so, and a node the cloud has not heard of is one.
	MachineRunning MachineState = "running"
	// MachineShutDown is a machine that is stopped but still exists: the cloud node
	// lifecycle controller taints its NotReady node node.cloudprovider.kubernetes.io/shutdown.
	MachineShutDown MachineState = "shut down"
	// MachineGone is a machine that was deleted: the controller deletes its NotReady Node.
	MachineGone MachineState = "gone"
)

// TestCloudProviderName is the test cloud's cloudprovider.Interface ProviderName.
const TestCloudProviderName = "adc-test-cloud"

// CloudNodeLifecycleUserAgent is the user agent of the cloud node lifecycle controller's
// client, as cloud-controller-manager names it, so that the API server's audit log and the
// nodes' managedFields tell its writes from the test's.
const CloudNodeLifecycleUserAgent = "cloud-node-lifecycle-controller"

// TestCloud is a cloud provider for tests: it knows the state of each hollow node's "machine"
// (running, shut down or gone), which the test sets, and answers the cloud node lifecycle
// controller's InstancesV2 questions from it. It is no real cloud's model: only what
// k8s.io/cloud-provider's node lifecycle controller asks (InstanceExists, InstanceShutdown),
// so that the node.cloudprovider.kubernetes.io/shutdown taint and the deletion of a gone
// machine's Node come from the real controller, never from a test.
type TestCloud struct {
	mu       sync.Mutex
	machines map[string]MachineState
}

var (
	_ cloudprovider.Interface   = (*TestCloud)(nil)
	_ cloudprovider.InstancesV2 = (*TestCloud)(nil)
)

// NewTestCloud returns a test cloud in which every machine runs.
func NewTestCloud() *TestCloud { return &TestCloud{machines: map[string]MachineState{}} }

// SetMachine sets the state of node's machine.
func (c *TestCloud) SetMachine(node string, state MachineState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.machines[node] = state
}

// Machine returns the state of node's machine (running for one never set).
func (c *TestCloud) Machine(node string) MachineState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.machines[node]; ok {
		return s
	}
	return MachineRunning
}

// Initialize starts nothing: the test cloud has no housekeeping.
func (c *TestCloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer is not supported: the scenarios need none.
func (c *TestCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

// Instances is not supported: InstancesV2 is what external cloud providers implement.
func (c *TestCloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 is the test cloud itself: the node lifecycle controller's questions.
func (c *TestCloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c, true }

// Zones is not supported (deprecated in favour of InstancesV2's metadata).
func (c *TestCloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not supported.
func (c *TestCloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes is not supported.
func (c *TestCloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName returns TestCloudProviderName.
func (c *TestCloud) ProviderName() string { return TestCloudProviderName }

// HasClusterID returns true: one cluster per test cloud, so there is no cluster ID to miss
// (false makes cloud-controller-manager refuse to start without --allow-untagged-cloud).
func (c *TestCloud) HasClusterID() bool { return true }

// InstanceExists says whether node's machine exists: false once it is gone.
func (c *TestCloud) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	return c.Machine(node.Name) != MachineGone, nil
}

// InstanceShutdown says whether node's machine is shut down.
func (c *TestCloud) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	return c.Machine(node.Name) == MachineShutDown, nil
}

// InstanceMetadata returns the machine's provider ID (adc-test-cloud://<node>), or
// InstanceNotFound once it is gone. The node lifecycle controller does not ask for it
// (InstancesV2 takes the Node); cloud-controller-manager's node controller would, on
// registration, which the harness does not run.
func (c *TestCloud) InstanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if c.Machine(node.Name) == MachineGone {
		return nil, cloudprovider.InstanceNotFound
	}
	return &cloudprovider.InstanceMetadata{ProviderID: TestCloudProviderName + "://" + node.Name}, nil
}

// runCloudNodeLifecycle runs k8s.io/cloud-provider's cloud node lifecycle controller with
// cloud against the API server of cfg, in this process, until the returned stop is called
// (which waits for it to end). It runs with cfg's credentials (the cluster admin's): in a
// real cluster cloud-controller-manager runs it with its own, which only matters to an RBAC
// check, and none of the scenarios checks the cloud's.
func runCloudNodeLifecycle(cfg *rest.Config, cloud cloudprovider.Interface, monitorPeriod time.Duration) (stop func(), err error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = CloudNodeLifecycleUserAgent
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cloud node lifecycle controller: client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := nodelifecycle.NewCloudNodeLifecycleController(factory.Core().V1().Nodes(), client, cloud, monitorPeriod)
	if err != nil {
		return nil, fmt.Errorf("cloud node lifecycle controller: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := testinformers.Start(ctx, factory); err != nil {
		cancel()
		return nil, fmt.Errorf("cloud node lifecycle controller: node informer: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, controllersmetrics.NewControllerManagerMetrics("cloud-controller-manager"))
	}()
	return func() {
		cancel()
		<-done
		factory.Shutdown()
	}, nil
}

// errNoKubelet is returned for a node the cluster has no kubelet of.
var errNoKubelet = errors.New("no such node")
