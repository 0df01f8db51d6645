package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// The functions in this file are written by hand in the shape deepcopy-gen would produce;
// they let the types satisfy runtime.Object (schemes, fakes, informer caches) without a code
// generator in the build.

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSIDriverInfoSpec) DeepCopyInto(out *CSIDriverInfoSpec) {
	*out = *in
	if in.TopologyKeys != nil {
		out.TopologyKeys = make([]string, len(in.TopologyKeys))
		copy(out.TopologyKeys, in.TopologyKeys)
	}
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSIDriverInfoSpec) DeepCopy() *CSIDriverInfoSpec {
	if in == nil {
		return nil
	}
	out := new(CSIDriverInfoSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSIDriverInfoStatus) DeepCopyInto(out *CSIDriverInfoStatus) {
	*out = *in
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSIDriverInfoStatus) DeepCopy() *CSIDriverInfoStatus {
	if in == nil {
		return nil
	}
	out := new(CSIDriverInfoStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSINodeInfoSpec) DeepCopyInto(out *CSINodeInfoSpec) {
	*out = *in
	if in.Drivers != nil {
		out.Drivers = make([]CSIDriverInfoSpec, len(in.Drivers))
		for i := range in.Drivers {
			in.Drivers[i].DeepCopyInto(&out.Drivers[i])
		}
	}
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSINodeInfoSpec) DeepCopy() *CSINodeInfoSpec {
	if in == nil {
		return nil
	}
	out := new(CSINodeInfoSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSINodeInfoStatus) DeepCopyInto(out *CSINodeInfoStatus) {
	*out = *in
	if in.Drivers != nil {
		out.Drivers = make([]CSIDriverInfoStatus, len(in.Drivers))
		copy(out.Drivers, in.Drivers)
	}
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSINodeInfoStatus) DeepCopy() *CSINodeInfoStatus {
	if in == nil {
		return nil
	}
	out := new(CSINodeInfoStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSINodeInfo) DeepCopyInto(out *CSINodeInfo) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSINodeInfo) DeepCopy() *CSINodeInfo {
	if in == nil {
		return nil
	}
	out := new(CSINodeInfo)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *CSINodeInfo) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *CSINodeInfoList) DeepCopyInto(out *CSINodeInfoList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]CSINodeInfo, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a new copy of the receiver, or nil for a nil receiver.
func (in *CSINodeInfoList) DeepCopy() *CSINodeInfoList {
	if in == nil {
		return nil
	}
	out := new(CSINodeInfoList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *CSINodeInfoList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
