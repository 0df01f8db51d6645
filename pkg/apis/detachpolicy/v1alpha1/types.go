package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DetachPolicy says what proves, for the volumes it selects, that a node which is not Ready no
// longer uses them, and whether a timeout may detach them without such proof. adc reads it;
// nothing else writes its spec.
type DetachPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the policy selects and accepts.
	Spec DetachPolicySpec `json:"spec"`
	// status is adc's verdict on the policy (valid or why not).
	// +optional
	Status DetachPolicyStatus `json:"status,omitempty"`
}

// DetachPolicySpec is the specification of a DetachPolicy.
type DetachPolicySpec struct {
	// default makes this policy apply to every volume no other policy selects. At most one
	// policy may be the default; with none, adc's built-in rule applies (upstream's: the
	// out-of-service taint, or --max-wait-for-unmount after the node left Ready).
	// +optional
	Default bool `json:"default,omitempty"`

	// volumes selects the volumes the policy covers.
	// +optional
	Volumes VolumeSelector `json:"volumes,omitempty"`

	// evidence lists what, besides the Node being deleted (always enough), proves that a node
	// that is not Ready no longer uses the volumes. Empty: only node deletion and the timeout.
	// +optional
	Evidence []EvidenceKind `json:"evidence,omitempty"`

	// fencing names the taints and conditions a fencing operator sets on the nodes it fenced;
	// required when evidence lists Fencing.
	// +optional
	Fencing *Fencing `json:"fencing,omitempty"`

	// timeout is how long after the node left Ready a volume still reported in use is
	// force-detached without evidence: a duration ("2m", "6m") or "Never". Unset: adc's
	// --max-wait-for-unmount.
	// +optional
	Timeout string `json:"timeout,omitempty"`
}

// VolumeSelector selects volumes by StorageClass, CSI driver or in-tree plugin. A volume
// matches when any list names it; a migrated in-tree PersistentVolume matches by its class or
// its in-tree plugin as well as by the CSI driver it migrates to.
type VolumeSelector struct {
	// storageClassNames are PersistentVolumes' spec.storageClassName values.
	// +optional
	StorageClassNames []string `json:"storageClassNames,omitempty"`
	// drivers are CSI driver names.
	// +optional
	Drivers []string `json:"drivers,omitempty"`
	// inTreePlugins are in-tree plugin names (kubernetes.io/aws-ebs, ...).
	// +optional
	InTreePlugins []string `json:"inTreePlugins,omitempty"`
}

// EvidenceKind is one kind of proof that a node no longer uses its volumes.
type EvidenceKind string

const (
	// EvidenceOutOfService is the node.kubernetes.io/out-of-service taint (KEP-2268).
	EvidenceOutOfService EvidenceKind = "OutOfService"
	// EvidenceCloudShutdown is node.cloudprovider.kubernetes.io/shutdown, the taint the cloud
	// node lifecycle controller sets when the provider reports the machine shut down.
	EvidenceCloudShutdown EvidenceKind = "CloudShutdown"
	// EvidenceFencing is a taint or condition of a fencing operator (spec.fencing).
	EvidenceFencing EvidenceKind = "Fencing"
	// EvidenceGracefulShutdown is the kubelet's graceful node shutdown, accepted only with
	// proof: the kubelet's own status.volumesInUse no longer lists the volume.
	EvidenceGracefulShutdown EvidenceKind = "GracefulShutdown"
)

// Fencing names what a fencing operator sets on the nodes it fenced.
type Fencing struct {
	// taints are taint keys; a node with any of them is fenced.
	// +optional
	Taints []string `json:"taints,omitempty"`
	// conditions are node condition types; a node whose condition of that type has the given
	// status is fenced.
	// +optional
	Conditions []FencingCondition `json:"conditions,omitempty"`
}

// FencingCondition is a node condition that says the node is fenced.
type FencingCondition struct {
	// type is the condition type.
	Type string `json:"type"`
	// status is the status that means fenced (default "True").
	// +optional
	Status string `json:"status,omitempty"`
}

// TimeoutNever disables the forced detach without evidence.
const TimeoutNever = "Never"

// DetachPolicyStatus is adc's verdict on a policy.
type DetachPolicyStatus struct {
	// observedGeneration is the generation adc judged.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Valid (True, or False with the reason adc ignores the policy).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionValid is the status condition adc sets on every policy it judged.
const ConditionValid = "Valid"

// DetachPolicyList is a collection of DetachPolicy objects, as returned by a list call.
type DetachPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of DetachPolicy.
	Items []DetachPolicy `json:"items"`
}
