package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured converts an object read through a dynamic client or informer into a
// typed DetachPolicy; an object of another kind is rejected rather than misread.
func FromUnstructured(u *unstructured.Unstructured) (*DetachPolicy, error) {
	if u == nil {
		return nil, fmt.Errorf("converting DetachPolicy from unstructured: object is nil")
	}
	if gvk := u.GroupVersionKind(); gvk.Kind != "" && gvk != GroupVersionKind {
		return nil, fmt.Errorf("converting DetachPolicy %q from unstructured: object is a %s, not a %s", u.GetName(), gvk, GroupVersionKind)
	}
	out := &DetachPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("converting DetachPolicy %q from unstructured: %w; the object does not match the %s schema, check the installed CRD (deploy/crds)", u.GetName(), err, SchemeGroupVersion)
	}
	return out, nil
}

// ToUnstructured converts a typed DetachPolicy into the unstructured form a dynamic client
// creates or updates, with apiVersion and kind filled in.
func ToUnstructured(in *DetachPolicy) (*unstructured.Unstructured, error) {
	if in == nil {
		return nil, fmt.Errorf("converting DetachPolicy to unstructured: object is nil")
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return nil, fmt.Errorf("converting DetachPolicy %q to unstructured: %w", in.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(GroupVersionKind)
	return u, nil
}
