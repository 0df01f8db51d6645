package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The functions in this file are written by hand in the shape deepcopy-gen would produce;
// they let the types satisfy runtime.Object (schemes, fakes, informer caches) without a code
// generator in the build.

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *DetachPolicySpec) DeepCopyInto(out *DetachPolicySpec) {
	*out = *in
	out.Volumes = VolumeSelector{
		StorageClassNames: slices.Clone(in.Volumes.StorageClassNames),
		Drivers:           slices.Clone(in.Volumes.Drivers),
		InTreePlugins:     slices.Clone(in.Volumes.InTreePlugins),
	}
	out.Evidence = slices.Clone(in.Evidence)
	if in.Fencing != nil {
		out.Fencing = &Fencing{Taints: slices.Clone(in.Fencing.Taints), Conditions: slices.Clone(in.Fencing.Conditions)}
	}
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *DetachPolicyStatus) DeepCopyInto(out *DetachPolicyStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *DetachPolicy) DeepCopyInto(out *DetachPolicy) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *DetachPolicy) DeepCopy() *DetachPolicy {
	if in == nil {
		return nil
	}
	out := new(DetachPolicy)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *DetachPolicy) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *DetachPolicyList) DeepCopyInto(out *DetachPolicyList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]DetachPolicy, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *DetachPolicyList) DeepCopy() *DetachPolicyList {
	if in == nil {
		return nil
	}
	out := new(DetachPolicyList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *DetachPolicyList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
