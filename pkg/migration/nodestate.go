package migration

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// NodeMigrationState is what a node says about one in-tree plugin.
type NodeMigrationState int

const (
	// NodeStateUnknown means the object the node source reads does not exist yet, so the
	// node has not said anything; the caller must wait rather than guess.
	NodeStateUnknown NodeMigrationState = iota
	// NodeStateNotMigrated means the node uses the in-tree plugin.
	NodeStateNotMigrated
	// NodeStateMigrated means the node uses the CSI driver that replaces the plugin.
	NodeStateMigrated
)

// String returns a short lower-case name for logs and tests.
func (s NodeMigrationState) String() string {
	switch s {
	case NodeStateMigrated:
		return "migrated"
	case NodeStateNotMigrated:
		return "not-migrated"
	default:
		return "unknown"
	}
}

// NodeMigration is the answer of a node source for one plugin on one node, with the evidence
// that Decide quotes in its reason.
type NodeMigration struct {
	// State is migrated, not migrated, or unknown.
	State NodeMigrationState
	// Evidence names the object and field that gave the answer, e.g.
	// `CSINode "node-1" annotation storage.alpha.kubernetes.io/migrated-plugins`; for
	// NodeStateUnknown it says what is missing, e.g. `CSINode "node-1" does not exist yet`.
	Evidence string
	// Notes are non-fatal observations, such as unknown names in the CSINode annotation.
	Notes []string
}

// NodeObjects are the per-node objects a decision may consult. Any of them may be nil when
// it does not exist (yet). Name is the node name and must be set.
type NodeObjects struct {
	// Name is the node name the pod is scheduled to.
	Name string
	// Node is the Node object, if it exists.
	Node *v1.Node
	// CSINode is the storage.k8s.io/v1 CSINode named after the node, if it exists.
	CSINode *storagev1.CSINode
	// CSINodeInfo is the seed-API CSINodeInfo named after the node, if it exists.
	CSINodeInfo *csinodeinfo.CSINodeInfo
}

// NodePluginMigration asks the configured node source whether inTreePlugin (migrating to
// csiDriver) is migrated on the node, by one of three sources:
//   - csinode: the plugin is listed in the CSINode annotation => migrated; CSINode without it
//     (or without the annotation) => not migrated; no CSINode => unknown.
//   - csinodeinfo: the status.drivers entry for csiDriver with available=true and
//     volumePluginMechanism=csi => migrated; in-tree, unavailable or no entry => not migrated;
//     no CSINodeInfo => unknown.
//   - auto: the CSINode when it exists, else the CSINodeInfo, else unknown.
//
// An invalid source is reported as unknown with evidence naming the bad value; Decide turns
// it into an error before calling this.
func NodePluginMigration(source NodeSource, node NodeObjects, inTreePlugin, csiDriver string) NodeMigration {
	switch source {
	case NodeSourceCSINode, "":
		if node.CSINode == nil {
			return NodeMigration{State: NodeStateUnknown, Evidence: "CSINode " + strconv.Quote(node.Name) + " does not exist yet"}
		}
		return fromCSINode(node.CSINode, inTreePlugin)
	case NodeSourceCSINodeInfo:
		if node.CSINodeInfo == nil {
			return NodeMigration{State: NodeStateUnknown, Evidence: "CSINodeInfo " + strconv.Quote(node.Name) + " does not exist yet"}
		}
		return fromCSINodeInfo(node.CSINodeInfo, csiDriver)
	case NodeSourceAuto:
		if node.CSINode != nil {
			return fromCSINode(node.CSINode, inTreePlugin)
		}
		if node.CSINodeInfo != nil {
			return fromCSINodeInfo(node.CSINodeInfo, csiDriver)
		}
		q := strconv.Quote(node.Name)
		return NodeMigration{State: NodeStateUnknown, Evidence: "neither CSINode " + q + " nor CSINodeInfo " + q + " exists yet"}
	default:
		return NodeMigration{State: NodeStateUnknown, Evidence: "node migration source " + strconv.Quote(string(source)) + " is not valid"}
	}
}

func fromCSINode(csiNode *storagev1.CSINode, plugin string) NodeMigration {
	value := csiNode.Annotations[MigratedPluginsAnnotation]
	found, hasUnknown := annotationLists(value, plugin)
	// Object names are DNS names, so plain quotes suffice and keep this to one allocation.
	nm := NodeMigration{State: NodeStateNotMigrated, Evidence: "CSINode \"" + csiNode.Name + "\" annotation " + MigratedPluginsAnnotation}
	if found {
		nm.State = NodeStateMigrated
	}
	if hasUnknown {
		_, unknown := ParseMigratedPlugins(value)
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(u)
		}
		nm.Notes = []string{"CSINode " + strconv.Quote(csiNode.Name) + " annotation " + MigratedPluginsAnnotation +
			" lists unknown plugin name(s) " + strings.Join(quoted, ", ") + "; they are ignored (valid names: " + strings.Join(MigratablePlugins, ", ") + ")"}
	}
	return nm
}

func fromCSINodeInfo(info *csinodeinfo.CSINodeInfo, driver string) NodeMigration {
	evidence := "CSINodeInfo \"" + info.Name + "\" status.drivers[" + driver + "]"
	for i := range info.Status.Drivers {
		d := &info.Status.Drivers[i]
		if d.Name != driver {
			continue
		}
		if d.Available && d.VolumePluginMechanism == csinodeinfo.VolumePluginMechanismCSI {
			return NodeMigration{State: NodeStateMigrated, Evidence: evidence}
		}
		// The first entry for the driver decides; a list-map CRD keeps names unique anyway.
		return NodeMigration{State: NodeStateNotMigrated, Evidence: evidence + " (available=" + strconv.FormatBool(d.Available) + ", volumePluginMechanism=" + strconv.Quote(string(d.VolumePluginMechanism)) + ")"}
	}
	return NodeMigration{State: NodeStateNotMigrated, Evidence: evidence + " (no entry for the driver)"}
}
