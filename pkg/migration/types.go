// Package migration decides, for one volume of one scheduled pod on one node, whether the
// volume is attached the in-tree way, through a CSI driver, not at all, or not yet.
//
// The package is pure on purpose: every decision is a function of objects the caller has
// already listed (from informer caches in the controller, from a one-off List in `adc plan`).
// It holds no clients, no clocks and no globals, so the same code explains a decision in a
// dry run and makes it in the controller, and it can be fuzzed and benchmarked in isolation.
package migration

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// Mechanism is how a volume reaches a node. The string values are part of the public
// contract: they appear in `adc plan -o json`, in metrics labels and on the dashboard.
type Mechanism string

const (
	// MechanismCSI attaches through a VolumeAttachment handled by the CSI driver's
	// external-attacher.
	MechanismCSI Mechanism = "csi"
	// MechanismCSINoAttach means the CSI driver declared attachRequired=false: the kubelet
	// mounts directly and nothing is attached or listed in node status.
	MechanismCSINoAttach Mechanism = "csi-no-attach"
	// MechanismInTree attaches with the in-tree volume plugin, which only a host such as
	// kube-controller-manager can provide.
	MechanismInTree Mechanism = "in-tree"
	// MechanismNotAttachable covers volumes with no attach phase (configMap, emptyDir, nfs, ...).
	MechanismNotAttachable Mechanism = "not-attachable"
	// MechanismWait means something the decision needs is not there yet (the node's
	// migration state, the CSI driver's registration on the node, the claim's binding; see
	// Decision.WaitCause); the controller holds the pair (no attach, no detach) and retries
	// with backoff instead of guessing.
	MechanismWait Mechanism = "wait"
	// MechanismError means the decision cannot be made safely (bad translation input, version
	// skew); the controller holds the pair and the reason tells the operator what to fix.
	MechanismError Mechanism = "error"
)

// Mechanisms lists every mechanism in a stable order, for summaries and metrics.
var Mechanisms = []Mechanism{MechanismCSI, MechanismCSINoAttach, MechanismInTree, MechanismNotAttachable, MechanismWait, MechanismError}

// Mode is the controller-side migration setting of one in-tree plugin.
type Mode string

const (
	// ModeOff keeps the plugin in-tree; a node that reports it migrated is version skew.
	ModeOff Mode = "off"
	// ModeOn lets each node decide through its CSINode (or CSINodeInfo).
	ModeOn Mode = "on"
	// ModeComplete always uses CSI without consulting the node (upstream 1.36 behaviour).
	ModeComplete Mode = "complete"
)

// NodeSource selects which API object tells adc a node's migration state.
type NodeSource string

const (
	// NodeSourceCSINode reads the storage.k8s.io/v1 CSINode annotation
	// storage.alpha.kubernetes.io/migrated-plugins.
	NodeSourceCSINode NodeSource = "csinode"
	// NodeSourceCSINodeInfo reads the seed API csi.storage.k8s.io/v1alpha1 CSINodeInfo.
	NodeSourceCSINodeInfo NodeSource = "csinodeinfo"
	// NodeSourceAuto uses the CSINode when it exists, else the CSINodeInfo.
	NodeSourceAuto NodeSource = "auto"
)

// DriverSource selects which API object tells adc whether a CSI driver needs attach. The two
// APIs disagree on an existing object without attachRequired: storage.k8s.io/v1 means true,
// the seed API csi.storage.k8s.io/v1alpha1 means false. With no object at both, attach is
// required.
type DriverSource string

const (
	// DriverSourceCSIDriver reads only the storage.k8s.io/v1 CSIDriver (the default, and
	// upstream's behaviour).
	DriverSourceCSIDriver DriverSource = "csidriver"
	// DriverSourceSeed reads only the seed API csi.storage.k8s.io/v1alpha1 CSIDriver (a CRD).
	DriverSourceSeed DriverSource = "seed"
	// DriverSourceAuto uses the storage.k8s.io/v1 CSIDriver when it exists, else the seed one.
	DriverSourceAuto DriverSource = "auto"
)

// Config is the controller's migration configuration. The zero value is not useful; start
// from DefaultConfig.
type Config struct {
	// Modes maps an in-tree plugin name (kubernetes.io/gce-pd, ...) to its mode. A migratable
	// plugin missing from the map is treated as ModeOn.
	Modes map[string]Mode
	// NodeSource selects where node migration state is read from.
	NodeSource NodeSource
	// DriverSource selects where a CSI driver's attachRequired is read from; empty means
	// DriverSourceCSIDriver.
	DriverSource DriverSource
}

// DriverLookup returns the CSIDriver objects named name, or nil when there is none: the
// storage.k8s.io/v1 one and the seed-API csi.storage.k8s.io/v1alpha1 one. Config.DriverSource
// decides which of them counts; both are asked through one lookup so every caller (a lister in
// the controller, a listed map in `adc plan`, a map in tests) answers for both APIs.
type DriverLookup interface {
	CSIDriver(name string) *storagev1.CSIDriver
	SeedCSIDriver(name string) *seedcsidriver.CSIDriver
}

// Input is everything one decision may look at. Objects may be nil when absent; they are
// never modified.
type Input struct {
	// PV is the bound PersistentVolume of a PVC-backed pod volume; nil for inline volumes.
	PV *v1.PersistentVolume
	// InlineVolume is the pod's volume when it is not backed by a PVC; nil otherwise.
	InlineVolume *v1.Volume
	// PodNamespace is needed to translate inline volumes (secret references).
	PodNamespace string
	// NodeName is the node the pod is scheduled to.
	NodeName string
	// Node is the node's Node object, if listed.
	Node *v1.Node
	// CSINode is the node's storage.k8s.io/v1 CSINode, if it exists.
	CSINode *storagev1.CSINode
	// CSINodeInfo is the node's seed-API CSINodeInfo, if it exists.
	CSINodeInfo *csinodeinfo.CSINodeInfo
	// CSIDrivers resolves the CSIDrivers (storage.k8s.io/v1 and seed) of the driver the volume
	// resolves to. May be nil, which behaves as "no CSIDriver objects at all" (attach
	// required).
	CSIDrivers DriverLookup
}

// Decision is the outcome for one (volume, node) pair, with everything the controller needs
// to act and everything an operator needs to understand why.
type Decision struct {
	// Mechanism is how the volume is attached to the node.
	Mechanism Mechanism
	// Plugin is the in-tree plugin name (kubernetes.io/gce-pd, kubernetes.io/configmap, ...)
	// or "kubernetes.io/csi" for native CSI volumes; empty when it cannot be determined.
	Plugin string
	// InTreePlugin is set when the volume is an in-tree volume of a migratable plugin.
	InTreePlugin string
	// Driver is the CSI driver the volume resolves to (translated for in-tree volumes).
	Driver string
	// VolumeHandle is the CSI volume handle (translated for in-tree volumes).
	VolumeHandle string
	// UniqueName is the name the kubelet expects in Node status.volumesAttached for the
	// chosen mechanism: kubernetes.io/csi/<driver>^<handle> for CSI, <plugin>/<volume id>
	// for in-tree.
	UniqueName string
	// InTreeUniqueName is the in-tree unique name (<plugin>/<volume id>) of an attachable
	// in-tree volume whatever the mechanism, so the controller recognises an attachment the
	// in-tree plugin made before the node migrated (and keeps it instead of re-attaching).
	InTreeUniqueName string
	// VolumeKey identifies the physical volume independently of the mechanism
	// (<driver>^<handle>), so a node flipping between in-tree and CSI keeps its attachment.
	VolumeKey string
	// VolumeAttachmentName is the VolumeAttachment the CSI path uses; empty otherwise.
	VolumeAttachmentName string
	// Source is the VolumeAttachment source: the PV name, or the translated inline spec.
	Source storagev1.VolumeAttachmentSource
	// MultiAttachAllowed is true when the (translated) spec has ReadWriteMany or ReadOnlyMany.
	MultiAttachAllowed bool
	// Reason is a human sentence saying why this mechanism was chosen, or what is wrong and
	// what the operator should do for wait and error.
	Reason string
	// Notes carries non-fatal observations, such as unknown plugin names in a CSINode
	// annotation.
	Notes []string
	// WaitCause says what a MechanismWait decision waits for, so a caller can name it (an
	// Event reason, a metric label) without parsing Reason; empty for other mechanisms.
	WaitCause WaitCause
}

// WaitCause is what a wait decision waits for. The string values may appear in JSON and
// metric labels.
type WaitCause string

const (
	// WaitNodeMigrationState: the node has not said whether the plugin is migrated (no
	// CSINode or CSINodeInfo yet).
	WaitNodeMigrationState WaitCause = "node-migration-state"
	// WaitDriverRegistration: the volume goes through a CSI driver whose node plugin has not
	// registered on the node yet (its CSINode does not list the driver), so the
	// external-attacher could not attach it there.
	WaitDriverRegistration WaitCause = "driver-registration"
	// WaitVolumeBinding: the pod's claim is missing, not bound yet, or bound to a
	// PersistentVolume that does not exist yet.
	WaitVolumeBinding WaitCause = "volume-binding"
)

// CSIPluginName is the plugin name native CSI volumes report.
const CSIPluginName = "kubernetes.io/csi"

// MigratedPluginsAnnotation is the CSINode annotation in which the kubelet lists the in-tree
// plugins migrated on its node.
const MigratedPluginsAnnotation = "storage.alpha.kubernetes.io/migrated-plugins"

// ManagedAnnotation marks the nodes whose attach and detach the controller owns; the kubelet
// sets it. Other nodes are left alone entirely, by the controller and in every report.
const ManagedAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

// IsManagedNode reports whether the attach/detach controller manages the node's volumes.
func IsManagedNode(node *v1.Node) bool {
	return node != nil && node.Annotations[ManagedAnnotation] == "true"
}
