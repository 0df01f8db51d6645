package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// Timings are the cluster's shortened clocks, each set by a flag of the real component.
type Timings struct {
	// NodeLeaseDuration is the kubelets' node Lease (renewed every quarter of it; kubelet
	// default 40 s).
	NodeLeaseDuration time.Duration
	// NodeMonitorGracePeriod is how long the node lifecycle controller waits for a Lease
	// renewal before it marks the node's Ready condition Unknown and taints it unreachable
	// (default 50 s).
	NodeMonitorGracePeriod time.Duration
	// NodeMonitorPeriod is how often it checks (default 5 s), and how often the cloud node
	// lifecycle controller asks the test cloud about NotReady nodes (cloud-controller-manager's
	// --node-monitor-period, default 5 s too).
	NodeMonitorPeriod time.Duration
	// TolerationSeconds are the not-ready and unreachable NoExecute tolerations the API
	// server's DefaultTolerationSeconds admission gives every pod (default 300): after them
	// the taint eviction controller deletes the pods of a lost node.
	TolerationSeconds int
	// MaxWaitForUnmount is adc's --max-wait-for-unmount in the kcm-adc and standalone modes
	// (default 6 min). The stock attach/detach controller has no such flag.
	MaxWaitForUnmount time.Duration
}

// DefaultTimings are the clocks the tests and `make cluster` use.
var DefaultTimings = Timings{
	NodeLeaseDuration:      10 * time.Second,
	NodeMonitorGracePeriod: 15 * time.Second,
	NodeMonitorPeriod:      time.Second,
	TolerationSeconds:      5,
	MaxWaitForUnmount:      30 * time.Second,
}

// UpstreamTimings are the components' own defaults, for measures users compare with their
// clusters (make bench-cluster).
var UpstreamTimings = Timings{
	NodeLeaseDuration:      40 * time.Second,
	NodeMonitorGracePeriod: 50 * time.Second,
	NodeMonitorPeriod:      5 * time.Second,
	TolerationSeconds:      300,
	MaxWaitForUnmount:      6 * time.Minute,
}

// StockMaxWaitForUnmount is the stock attach/detach controller's wait before it detaches a
// volume its node still reports in use from a node that is not healthy
// (attachdetach.DefaultTimerConfig.ReconcilerMaxWaitForUnmountDuration, no flag).
const StockMaxWaitForUnmount = 6 * time.Minute

// ForceDetachAfter returns how long the mode's attach/detach controller waits before it
// force-detaches a volume still in use on a node that is not Ready.
func (t Timings) ForceDetachAfter(m Mode) time.Duration {
	if m == Stock {
		return StockMaxWaitForUnmount
	}
	return t.MaxWaitForUnmount
}

// Options describe one cluster.
type Options struct {
	// Mode is the attach/detach controller's mode (required).
	Mode Mode
	// Assets are the cluster's binaries (FindAssets).
	Assets Assets
	// ADCBinary is the adc binary, for the standalone mode (framework.BuildADC builds one).
	ADCBinary string
	// Nodes are the node names, each a hollow kubelet.
	Nodes []string
	// NodeLabels are, per node, the labels its kubelet registers with (e.g. a zone).
	NodeLabels map[string]map[string]string
	// Drivers are the CSI drivers (default: harness.DefaultDriver).
	Drivers []harness.DriverOptions
	// Timings default to DefaultTimings.
	Timings *Timings
	// KubeAPIQPS, when positive, is kube-controller-manager's and kube-scheduler's client
	// QPS (burst twice that) instead of their defaults (20/30 and 50/100), for benchmarks.
	KubeAPIQPS int
	// KubeletStatusFrequency is the kubelets' node status period (default 1 s).
	KubeletStatusFrequency time.Duration
	// Controllers, when set, is kube-controller-manager's --controllers instead of the mode's
	// (Mode.Controllers), e.g. "*" for a cluster that starts under the built-in attach/detach
	// controller and switches to adc later (handover_test.go).
	Controllers string
	// DeferADC, in the standalone mode, leaves the adc process stopped: the test starts it
	// (Stack.ADC().Start).
	DeferADC bool
	// AuditPolicy, when set, is the API server's audit policy (harness.Options.AuditPolicy),
	// in every mode; the standalone mode audits with auditlog.PolicyAll otherwise.
	AuditPolicy string
	// Log receives the harness's progress lines; nil discards them.
	Log io.Writer
}

// HarnessOptions returns the end-to-end harness's options for o: the mode's
// kube-controller-manager, kube-scheduler, the shortened clocks, and adc as a process in the
// standalone mode.
func (o Options) HarnessOptions() (harness.Options, error) {
	t := DefaultTimings
	if o.Timings != nil {
		t = *o.Timings
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return harness.Options{}, err
	}
	if o.Mode == KCMADC {
		if err := present(o.Assets.KCMADC, "make kcm-adc (or set "+KCMADCEnv+")"); err != nil {
			return harness.Options{}, err
		}
	}
	kcmArgs := []string{
		"--node-monitor-grace-period", t.NodeMonitorGracePeriod.String(),
		"--node-monitor-period", t.NodeMonitorPeriod.String(),
	}
	if o.Mode == KCMADC {
		kcmArgs = append(kcmArgs, "--adc-max-wait-for-unmount", t.MaxWaitForUnmount.String())
	}
	var schedArgs []string
	if o.KubeAPIQPS > 0 {
		qps, burst := strconv.Itoa(o.KubeAPIQPS), strconv.Itoa(2*o.KubeAPIQPS)
		kcmArgs = append(kcmArgs, "--kube-api-qps", qps, "--kube-api-burst", burst)
		schedArgs = append(schedArgs, "--kube-api-qps", qps, "--kube-api-burst", burst)
	}
	tolerations := strconv.Itoa(t.TolerationSeconds)
	h := harness.Options{
		Nodes:                     o.Nodes,
		NodeLabels:                o.NodeLabels,
		Drivers:                   o.Drivers,
		NodeStatusUpdateFrequency: o.KubeletStatusFrequency,
		NodeLeaseDuration:         t.NodeLeaseDuration,
		APIServerFlags: map[string]string{
			// envtest disables the ServiceAccount admission plugin (nothing would create the
			// default ServiceAccount); here kube-controller-manager does, so pods get their
			// token volume as in any cluster.
			"disable-admission-plugins":              "",
			"default-not-ready-toleration-seconds":   tolerations,
			"default-unreachable-toleration-seconds": tolerations,
		},
		Cluster: &harness.ClusterOptions{
			ControllerManager:     o.Assets.ControllerManager(o.Mode),
			Controllers:           o.controllers(),
			ControllerManagerArgs: kcmArgs,
			Scheduler:             o.Assets.Scheduler,
			SchedulerArgs:         schedArgs,
		},
		// adc's DetachPolicy CRD in every mode (the stock controller ignores it), installed
		// before kube-controller-manager starts, as deploy/crds would be; inside
		// kube-controller-manager adc reads it as the attachdetach-controller ServiceAccount
		// (--use-service-account-credentials), which the shipped seed-API RBAC lets do so.
		CRDs:        []string{DetachPolicyCRD()},
		AuditPolicy: o.AuditPolicy,
		Log:         o.Log,
	}
	if o.Mode == KCMADC {
		h.RBAC = []string{filepath.Join(sourceRoot(), "deploy", "kube-controller-manager", "seed-api-rbac.yaml")}
	}
	if o.Mode == Standalone {
		if o.ADCBinary == "" {
			return h, fmt.Errorf("cluster: the standalone mode needs Options.ADCBinary")
		}
		h.ADCBinary = o.ADCBinary
		h.ADCArgs = []string{"--max-wait-for-unmount", t.MaxWaitForUnmount.String()}
		h.ShippedRBAC = true
		h.DeferADC = o.DeferADC
	} else {
		h.NoADC = true
	}
	return h, nil
}

// controllers is kube-controller-manager's --controllers: Options.Controllers, else the mode's.
func (o Options) controllers() string {
	if o.Controllers != "" {
		return o.Controllers
	}
	return o.Mode.Controllers()
}

// DetachPolicyCRD returns the path of adc's DetachPolicy CRD manifest (deploy/crds), which
// every cluster has installed.
func DetachPolicyCRD() string {
	return filepath.Join(sourceRoot(), "deploy", "crds", "adc.migration-aware.io_detachpolicies.yaml")
}

// Cluster is a started cluster: the harness's stack and its cloud.
type Cluster struct {
	*harness.Stack
	// Cloud is the test cloud the cloud node lifecycle controller asks about each node's
	// machine; ShutDownMachine, PartitionNode, DeleteMachine and StartMachine change it.
	Cloud *TestCloud

	stopCloud func()
	stopOnce  sync.Once
	stopErr   error
}

// Start starts a cluster of o's mode and waits until every node is registered and
// schedulable (the node lifecycle controller took the kubelet's not-ready taint off). It runs
// the cloud node lifecycle controller of k8s.io/cloud-provider with a test cloud in this
// process, as cloud-controller-manager runs it in a cloud, in every mode: the shutdown taint
// and the deletion of a gone machine's Node come from it.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	h, err := o.HarnessOptions()
	if err != nil {
		return nil, err
	}
	t := DefaultTimings
	if o.Timings != nil {
		t = *o.Timings
	}
	s, err := harness.Start(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("cluster (%s): %w", o.Mode, err)
	}
	c := &Cluster{Stack: s, Cloud: NewTestCloud()}
	if c.stopCloud, err = runCloudNodeLifecycle(s.ControlPlane().Config, c.Cloud, t.NodeMonitorPeriod); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("cluster (%s): %w", o.Mode, err)
	}
	if err := WaitNodesSchedulable(ctx, s.Client, s.Nodes(), time.Minute); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("cluster (%s): %w", o.Mode, err)
	}
	return c, nil
}

// Stop stops the cloud node lifecycle controller, then the stack (Stack.Stop), so that the
// controller never talks to a stopped API server. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.stopCloud != nil {
			c.stopCloud()
		}
		c.stopErr = c.Stack.Stop()
	})
	return c.stopErr
}

// kubelet returns node's kubelet, or an error naming the node.
func (c *Cluster) kubelet(node string) (*harness.Kubelet, error) {
	k := c.Kubelet(node)
	if k == nil {
		return nil, fmt.Errorf("cluster: node %s: %w", node, errNoKubelet)
	}
	return k, nil
}

// ShutDownMachine shuts node's machine down, as a cloud user stopping the VM does: its
// kubelet is killed (SIGKILL, nothing graceful) and the test cloud reports the machine shut
// down. Once the node lifecycle controller has marked the node NotReady, the cloud node
// lifecycle controller taints it node.cloudprovider.kubernetes.io/shutdown:NoSchedule.
func (c *Cluster) ShutDownMachine(node string) error {
	k, err := c.kubelet(node)
	if err != nil {
		return err
	}
	c.Cloud.SetMachine(node, MachineShutDown)
	if err := k.Kill(); err != nil {
		return fmt.Errorf("cluster: shutting down the machine of node %s: %w", node, err)
	}
	return nil
}

// PartitionNode cuts node off the cluster: its kubelet is killed, but its machine runs as
// far as the cloud knows (a network partition, a crashed kubelet). The node goes NotReady
// and never gets the shutdown taint: nothing tells the cluster the machine stopped.
func (c *Cluster) PartitionNode(node string) error {
	k, err := c.kubelet(node)
	if err != nil {
		return err
	}
	c.Cloud.SetMachine(node, MachineRunning)
	if err := k.Kill(); err != nil {
		return fmt.Errorf("cluster: partitioning node %s: %w", node, err)
	}
	return nil
}

// DeleteMachine deletes node's machine, as a cloud user deleting the VM does: its kubelet is
// killed and the test cloud no longer knows the machine. Once the node is NotReady, the cloud
// node lifecycle controller deletes its Node.
func (c *Cluster) DeleteMachine(node string) error {
	k, err := c.kubelet(node)
	if err != nil {
		return err
	}
	c.Cloud.SetMachine(node, MachineGone)
	if err := k.Kill(); err != nil {
		return fmt.Errorf("cluster: deleting the machine of node %s: %w", node, err)
	}
	return nil
}

// StartMachine brings node's shut-down or partitioned machine back: the test cloud reports
// it running and its kubelet starts again (same root dir, as after a reboot). The caller
// waits for it (harness.Kubelet.WaitRegistered); once the node is Ready the cloud node
// lifecycle controller takes the shutdown taint off. A gone machine's Node was deleted: its
// kubelet registers a new one.
func (c *Cluster) StartMachine(node string) error {
	k, err := c.kubelet(node)
	if err != nil {
		return err
	}
	c.Cloud.SetMachine(node, MachineRunning)
	if err := k.Start(); err != nil {
		return fmt.Errorf("cluster: starting the machine of node %s: %w", node, err)
	}
	return nil
}
