package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of the seed API; the CRD manifest must use the same value.
	GroupName = "csi.storage.k8s.io"
	// Version is the only version the seed API ever had.
	Version = "v1alpha1"
	// Kind is the kind of a single object; the object's name is the CSI driver's name.
	Kind = "CSIDriver"
	// ListKind is the kind of a list of CSIDriver objects, needed by dynamic list calls.
	ListKind = "CSIDriverList"
	// Resource is the plural resource name. It equals the storage.k8s.io one, so messages
	// always name the group too.
	Resource = "csidrivers"
)

var (
	// SchemeGroupVersion is the group and version the types are registered under.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersionResource addresses seed CSIDrivers through a dynamic client or informer,
	// which is how adc reads them (there is no generated typed client).
	GroupVersionResource = SchemeGroupVersion.WithResource(Resource)
	// GroupVersionKind identifies a single seed CSIDriver in unstructured objects and schemes.
	GroupVersionKind = SchemeGroupVersion.WithKind(Kind)

	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds CSIDriver and CSIDriverList to a scheme, for fakes and decoders.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &CSIDriver{}, &CSIDriverList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
