package cached

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The readers below read an object of either form (whole, or compact) for the one question
// the controller asks, without rebuilding a compact object whole.

// VANodeName returns the node of a VolumeAttachment.
func VANodeName(obj interface{}) (string, bool) {
	switch va := obj.(type) {
	case *storagev1.VolumeAttachment:
		return va.Spec.NodeName, va != nil
	case *cachedVA:
		return va.nodeName, va != nil
	}
	return "", false
}

// PodVolumes gives what deciding a pod's volumes reads of a pod cache entry: its metadata
// and spec.volumes (of a compact pod, only the volumes are rebuilt).
func PodVolumes(obj interface{}) (metav1.Object, []v1.Volume, bool) {
	switch p := obj.(type) {
	case *v1.Pod:
		if p != nil {
			return &p.ObjectMeta, p.Spec.Volumes, true
		}
	case *cachedPod:
		if p != nil {
			return &p.compactMeta, p.v1Volumes(), true
		}
	}
	return nil, nil, false
}

// PodClaims returns a pod's namespace and name and the claims it uses: its
// persistentVolumeClaim volumes and the claims of its generic ephemeral volumes, named
// <pod>-<volume>. ok is false for anything but a pod.
func PodClaims(obj interface{}) (namespace, name string, claims []string, ok bool) {
	switch pod := obj.(type) {
	case *v1.Pod:
		if pod == nil {
			return "", "", nil, false
		}
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			switch {
			case vol.PersistentVolumeClaim != nil:
				claims = append(claims, vol.PersistentVolumeClaim.ClaimName)
			case vol.Ephemeral != nil:
				claims = append(claims, pod.Name+"-"+vol.Name)
			}
		}
		return pod.Namespace, pod.Name, claims, true
	case *cachedPod:
		if pod == nil {
			return "", "", nil, false
		}
		for i := range pod.volumes {
			vol := &pod.volumes[i]
			switch {
			case vol.kind == volumeClaim:
				claims = append(claims, vol.claim)
			case vol.source != nil && vol.source.Ephemeral != nil:
				claims = append(claims, pod.name+"-"+vol.name)
			}
		}
		return pod.namespace, pod.name, claims, true
	}
	return "", "", nil, false
}

// PVCSISource returns the CSI source of a PersistentVolume, nil when it has none.
func PVCSISource(obj interface{}) *v1.CSIPersistentVolumeSource {
	if p, ok := obj.(*cachedPV); ok {
		switch src := p.source.(type) {
		case *v1.CSIPersistentVolumeSource:
			return src
		case *v1.PersistentVolumeSource:
			return src.CSI
		}
		return nil
	}
	if pv, ok := PVOf(obj); ok {
		return pv.Spec.CSI
	}
	return nil
}
