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
	// Kind is the kind of a single object; the object's name is the node's name.
	Kind = "CSINodeInfo"
	// ListKind is the kind of a list of CSINodeInfo objects, needed by dynamic list calls.
	ListKind = "CSINodeInfoList"
	// CsiNodeInfoResourcePlural is the plural resource name, as the seed API spelled it.
	CsiNodeInfoResourcePlural = "csinodeinfos"
	// Resource is an alias of CsiNodeInfoResourcePlural with a name that reads better at call
	// sites outside this package.
	Resource = CsiNodeInfoResourcePlural
)

var (
	// SchemeGroupVersion is the group and version the types are registered under.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersionResource addresses CSINodeInfos through a dynamic client or informer, which
	// is how adc reads them (there is no generated typed client).
	GroupVersionResource = SchemeGroupVersion.WithResource(CsiNodeInfoResourcePlural)
	// GroupVersionKind identifies a single CSINodeInfo in unstructured objects and schemes.
	GroupVersionKind = SchemeGroupVersion.WithKind(Kind)

	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds CSINodeInfo and CSINodeInfoList to a scheme, for fakes and decoders.
	AddToScheme = SchemeBuilder.AddToScheme
)

// GroupResource qualifies an unqualified resource name with this API group, for errors.
func GroupResource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &CSINodeInfo{}, &CSINodeInfoList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
