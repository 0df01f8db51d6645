package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSIDriver captures information about a Container Storage Interface (CSI) volume driver
// deployed on the cluster. It is cluster-scoped and its name is the driver's name. adc reads
// Spec.AttachRequired to learn whether the driver's volumes need a VolumeAttachment.
type CSIDriver struct {
	metav1.TypeMeta `json:",inline"`

	// metadata.name is the name of the CSI driver this object refers to; it must be the name
	// returned by the driver's GetPluginName() call.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the specification of the CSI driver.
	Spec CSIDriverSpec `json:"spec"`
}

// CSIDriverSpec is the specification of a CSIDriver.
type CSIDriverSpec struct {
	// attachRequired says whether the driver needs an attach operation (it implements the CSI
	// ControllerPublishVolume() method), so that Kubernetes must attach and wait for the attach
	// to complete before mounting. Unlike storage.k8s.io/v1, an unset value means false: attach
	// is not called.
	// +optional
	AttachRequired *bool `json:"attachRequired,omitempty"`

	// podInfoOnMountVersion, when set to a supported version ("v1"), makes the kubelet pass
	// pod information (name, namespace, uid) as volume attributes in NodePublishVolume() calls.
	// adc does not read it; it is kept so objects round-trip unchanged.
	// +optional
	PodInfoOnMountVersion *string `json:"podInfoOnMountVersion,omitempty"`
}

// CSIDriverList is a collection of CSIDriver objects, as returned by a list call.
type CSIDriverList struct {
	metav1.TypeMeta `json:",inline"`

	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of CSIDriver.
	Items []CSIDriver `json:"items"`
}
