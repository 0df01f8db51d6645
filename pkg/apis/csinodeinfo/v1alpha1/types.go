package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSINodeInfo holds information about all CSI drivers installed on a node. It is
// cluster-scoped and its name is the Kubernetes node name. adc reads Status.Drivers to learn
// whether an in-tree plugin is migrated on that node.
type CSINodeInfo struct {
	metav1.TypeMeta `json:",inline"`

	// metadata.name must be the Kubernetes node name.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the specification of CSINodeInfo.
	Spec CSINodeInfoSpec `json:"spec"`

	// status is the current status of CSINodeInfo.
	Status CSINodeInfoStatus `json:"status"`
}

// CSINodeInfoSpec holds the specification of all CSI drivers installed on a node.
type CSINodeInfoSpec struct {
	// drivers is a list of specifications of CSIDriverInfo.
	// +patchMergeKey=name
	// +patchStrategy=merge
	Drivers []CSIDriverInfoSpec `json:"drivers" patchStrategy:"merge" patchMergeKey:"name"`
}

// CSIDriverInfoSpec holds the specification of one CSI driver installed on a node; the
// kubelet writes it at driver registration and does not change it afterwards.
type CSIDriverInfoSpec struct {
	// name is the name of the CSI driver, as returned by its GetPluginName() call.
	Name string `json:"name"`

	// nodeID is the node's ID from the driver's point of view.
	NodeID string `json:"nodeID"`

	// topologyKeys is the list of topology keys supported by the driver.
	TopologyKeys []string `json:"topologyKeys"`
}

// CSINodeInfoStatus holds the status of all CSI drivers installed on a node.
type CSINodeInfoStatus struct {
	// drivers is a list of the statuses of CSIDriverInfo.
	// +patchMergeKey=name
	// +patchStrategy=merge
	Drivers []CSIDriverInfoStatus `json:"drivers" patchStrategy:"merge" patchMergeKey:"name"`
}

// CSIDriverInfoStatus holds the status of one CSI driver installed on a node: whether it is
// registered, and which mechanism (in-tree or CSI) must be used for the volume plugin the
// driver replaces. This is the per-driver, per-node migration signal adc consumes.
type CSIDriverInfoStatus struct {
	// name is the name of the CSI driver this status refers to.
	Name string `json:"name"`

	// available is true when the driver is installed and registered on the node.
	Available bool `json:"available"`

	// volumePluginMechanism says whether the attach/detach controller must use the in-tree
	// plugin ("in-tree") or the CSI driver ("csi") for volumes of this driver's plugin.
	VolumePluginMechanism VolumePluginMechanism `json:"volumePluginMechanism"`
}

// VolumePluginMechanism is the mechanism components should use for volume operations.
type VolumePluginMechanism string

const (
	// VolumePluginMechanismInTree means components should use the in-tree plugin.
	VolumePluginMechanismInTree VolumePluginMechanism = "in-tree"
	// VolumePluginMechanismCSI means components should use the CSI driver.
	VolumePluginMechanismCSI VolumePluginMechanism = "csi"
)

// CSINodeInfoList is a collection of CSINodeInfo objects, as returned by a list call.
type CSINodeInfoList struct {
	metav1.TypeMeta `json:",inline"`

	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of CSINodeInfo.
	Items []CSINodeInfo `json:"items"`
}
