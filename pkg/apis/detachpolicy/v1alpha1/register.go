package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of adc's own APIs; the CRD manifest must use the same value.
	GroupName = "adc.migration-aware.io"
	// Version is the API version.
	Version = "v1alpha1"
	// Kind is the kind of a single object.
	Kind = "DetachPolicy"
	// ListKind is the kind of a list, needed by dynamic list calls.
	ListKind = "DetachPolicyList"
	// Resource is the plural resource name.
	Resource = "detachpolicies"
)

var (
	// SchemeGroupVersion is the group and version the types are registered under.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersionResource addresses DetachPolicies through a dynamic client or informer,
	// which is how adc reads them (there is no generated typed client).
	GroupVersionResource = SchemeGroupVersion.WithResource(Resource)
	// GroupVersionKind identifies a DetachPolicy in unstructured objects and schemes.
	GroupVersionKind = SchemeGroupVersion.WithKind(Kind)

	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds DetachPolicy and DetachPolicyList to a scheme, for fakes and decoders.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &DetachPolicy{}, &DetachPolicyList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
