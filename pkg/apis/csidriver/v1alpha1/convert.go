package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured converts an object read through a dynamic client or informer into a
// typed seed CSIDriver. adc has no generated typed client for this CRD, so every read goes
// through here. An object of another kind (or a storage.k8s.io/v1 CSIDriver, whose unset
// attachRequired means the opposite) is rejected rather than silently misread.
func FromUnstructured(u *unstructured.Unstructured) (*CSIDriver, error) {
	if u == nil {
		return nil, fmt.Errorf("converting CSIDriver from unstructured: object is nil")
	}
	if gvk := u.GroupVersionKind(); gvk.Kind != "" && gvk != GroupVersionKind {
		return nil, fmt.Errorf("converting CSIDriver %q from unstructured: object is a %s, not a %s; check that the informer or client watches %s",
			u.GetName(), gvk, GroupVersionKind, GroupVersionResource)
	}
	out := &CSIDriver{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("converting CSIDriver %q from unstructured: %w; the object does not match the csi.storage.k8s.io/v1alpha1 schema, check the installed CRD", u.GetName(), err)
	}
	return out, nil
}

// ToUnstructured converts a typed seed CSIDriver into the unstructured form a dynamic client
// creates or updates, filling in apiVersion and kind so callers (tests, tools) cannot forget
// them.
func ToUnstructured(in *CSIDriver) (*unstructured.Unstructured, error) {
	if in == nil {
		return nil, fmt.Errorf("converting CSIDriver to unstructured: object is nil")
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return nil, fmt.Errorf("converting CSIDriver %q to unstructured: %w", in.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(GroupVersionKind)
	return u, nil
}
