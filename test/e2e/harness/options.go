package harness

import (
	"fmt"
	"io"
	"time"
)

// Options say what a Stack runs; the zero value runs three nodes and one attachable driver.
type Options struct {
	// Nodes are the names of the nodes, each with its own hollow kubelet and root dir
	// (default e2e-node-1..3). Every driver serves every node, including deferred ones.
	Nodes []string
	// DeferredKubelets are nodes whose kubelet Start does not start (the node does not exist
	// until the test calls Kubelet(name).Start), for a kubelet that starts late.
	DeferredKubelets []string
	// Drivers are the CSI drivers, each one mock driver process serving every node, with a
	// CSIDriver object and, when it needs attaching, its own csi-attacher
	// (default: one attachable driver named DefaultDriver).
	Drivers []DriverOptions
	// NodeStatusUpdateFrequency is the kubelets' status period, which bounds how soon they
	// report volumesInUse (default 1 s; kubemark's is 10 s).
	NodeStatusUpdateFrequency time.Duration
	// ADCBinary is the adc binary to run (required unless NoADC; framework.BuildADC builds one).
	ADCBinary string
	// NoADC runs no adc process: the attach/detach controller is the one inside Cluster's
	// kube-controller-manager (built in, or adc built in). It needs Cluster.
	NoADC bool
	// Cluster, when set, runs kube-scheduler and kube-controller-manager too, so that nothing
	// a cluster does by itself (PV binding, pod placement, NotReady and taints, pod garbage
	// collection) is left to the tests; see ClusterOptions.
	Cluster *ClusterOptions
	// APIServerFlags are extra kube-apiserver flags, name without "--" to value.
	APIServerFlags map[string]string
	// NodeLabels are, per node, the labels its kubelet registers the Node with (--node-labels),
	// e.g. the zone a cloud provider would label it with.
	NodeLabels map[string]map[string]string
	// NodeLeaseDuration is the kubelets' node Lease duration; they renew it every quarter of
	// that (default: the kubelet's 40 s). A node lifecycle controller's
	// --node-monitor-grace-period must be longer.
	NodeLeaseDuration time.Duration
	// ADCArgs are added to adc controller's flags (after the harness's own, so they win).
	ADCArgs []string
	// DeferADC leaves adc stopped; start it with ADC().Start.
	DeferADC bool
	// ShippedRBAC runs adc as the ServiceAccount of deploy/kubernetes with exactly the RBAC
	// shipped there (namespace.yaml and rbac.yaml applied; the admin impersonates the
	// ServiceAccount), and makes the API server keep an audit log
	// (ControlPlane().AuditLogPath), so that a suite can fail on any request refused to
	// ADCUser(). Without it adc runs as the admin.
	ShippedRBAC bool
	// AuditPolicy, when set, makes the API server keep an audit log
	// (ControlPlane().AuditLogPath) with this policy (YAML, e.g.
	// auditlog.PolicyAllWithBodies(...)), instead of ShippedRBAC's auditlog.PolicyAll. A
	// policy for ShippedRBAC must log every user's requests (the impersonated ServiceAccount's
	// are logged under the admin that authenticated).
	AuditPolicy string
	// CRDs are CustomResourceDefinition manifests (files) the stack creates, and waits for
	// until they are Established, before kube-controller-manager and adc start, as an
	// operator installs deploy/crds first (adc looks for its optional CRDs at start).
	CRDs []string
	// RBAC are RBAC manifests (files of the kinds ShippedRBAC applies) the stack creates before
	// kube-controller-manager starts, e.g. deploy/kube-controller-manager/seed-api-rbac.yaml.
	RBAC []string
	// AttacherArgs are added to every csi-attacher's flags.
	AttacherArgs []string
	// RestartableAPIServer lets the test restart the kube-apiserver (ControlPlane().RestartAPIServer).
	RestartableAPIServer bool
	// Log receives the harness's progress lines (e.g. testing.T's output through a writer);
	// nil discards them.
	Log io.Writer
}

// DriverOptions describe one CSI driver of a stack.
type DriverOptions struct {
	// Name is the driver name (GetPluginInfo, CSINode, VolumeAttachment spec.attacher).
	Name string
	// NoAttach makes the driver's CSIDriver attachRequired=false: the mock serves no
	// ControllerPublish, no csi-attacher runs, and no VolumeAttachment is expected.
	NoAttach bool
	// NoCSIDriverObject leaves out the CSIDriver object (attach is then required).
	NoCSIDriverObject bool
	// Topology is, per node, the accessible topology the driver's NodeGetInfo reports there
	// (key to value); the kubelet copies it to the Node's labels and CSINode's topologyKeys,
	// as with a zonal driver such as the GCE PD CSI driver (topology.gke.io/zone).
	Topology map[string]map[string]string
}

// Default names.
const (
	// DefaultDriver is the driver of a stack whose Options name none.
	DefaultDriver = "mock.csi.e2e.example.com"
	// GCEPDDriver is the CSI driver in-tree gce-pd volumes migrate to.
	GCEPDDriver = "pd.csi.storage.gke.io"
)

func (o Options) withDefaults() (Options, error) {
	if len(o.Nodes) == 0 {
		o.Nodes = []string{"e2e-node-1", "e2e-node-2", "e2e-node-3"}
	}
	if len(o.Drivers) == 0 {
		o.Drivers = []DriverOptions{{Name: DefaultDriver}}
	}
	if o.NodeStatusUpdateFrequency == 0 {
		o.NodeStatusUpdateFrequency = time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch {
	case o.NoADC && o.Cluster == nil:
		return o, fmt.Errorf("harness: Options.NoADC needs Options.Cluster (a kube-controller-manager that attaches)")
	case o.NoADC && o.ADCBinary != "":
		return o, fmt.Errorf("harness: Options.ADCBinary and Options.NoADC are both set")
	case !o.NoADC && o.ADCBinary == "":
		return o, fmt.Errorf("harness: Options.ADCBinary is required (framework.BuildADC builds one)")
	case o.Cluster != nil && (o.Cluster.ControllerManager == "" || o.Cluster.Scheduler == "" || o.Cluster.Controllers == ""):
		return o, fmt.Errorf("harness: Options.Cluster needs ControllerManager, Controllers and Scheduler")
	case o.NodeLeaseDuration%time.Second != 0:
		return o, fmt.Errorf("harness: Options.NodeLeaseDuration must be whole seconds, got %s", o.NodeLeaseDuration)
	}
	seen := map[string]bool{}
	for _, n := range o.Nodes {
		if seen[n] {
			return o, fmt.Errorf("harness: node %s listed twice in Options.Nodes", n)
		}
		seen[n] = true
	}
	for _, n := range o.DeferredKubelets {
		if !seen[n] {
			return o, fmt.Errorf("harness: deferred kubelet %s is not in Options.Nodes", n)
		}
	}
	drivers := map[string]bool{}
	for _, d := range o.Drivers {
		if d.Name == "" || drivers[d.Name] {
			return o, fmt.Errorf("harness: driver names must be set and distinct, got %q twice or empty", d.Name)
		}
		drivers[d.Name] = true
	}
	return o, nil
}
