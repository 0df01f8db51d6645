package cached

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/othercontroller"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// lastAppliedAnnotation is kubectl's copy of the whole applied object: often the largest
// field of an object and never read by adc.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TrimInformerObjects is a client-go informer transform (cache.TransformFunc) that keeps in
// adc's caches only what adc reads. Informer caches are most of adc's memory: a pod's
// containers, a node's images and every object's managedFields are read by nothing here, and
// at 10,000 volumes they cost more than everything else together.
//
// It keeps everything any decision, reconcile, status write, Event or report reads: object
// identity (name, namespace, UID, resourceVersion, deletion), a node's and a volume's labels
// and annotations (but kubectl's last-applied copy), a claim's owners; pods, claims and
// volumes lose the rest of their metadata (compactMeta keeps no more). Of the pod it keeps
// its node, volumes (sources of volume types adc only classifies are emptied, not
// dropped, so the same pairs exist), phase and whether a container runs; the node's spec,
// conditions, volumesAttached, volumesInUse and kubelet version; a claim's phase and volume
// name; a PersistentVolume's spec but its capacity and the claim reference's kind, API
// version and resourceVersion. VolumeAttachments lose their attachment metadata, the other
// storage objects only managedFields.
//
// Use it only on an informer factory adc owns (WithTrimmedObjects): inside
// kube-controller-manager the factory is the host's and other controllers read its objects
// whole. It changes the object it is given (the informer hands over freshly decoded objects)
// and is idempotent, as client-go requires.
func TrimInformerObjects(obj interface{}) (interface{}, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		trimmed, err := TrimInformerObjects(d.Obj)
		if err != nil {
			return nil, err
		}
		d.Obj = trimmed
		return d, nil
	}
	switch o := obj.(type) {
	case *v1.Pod:
		trimMeta(o)
		trimToCompactMeta(&o.ObjectMeta)
		// Nothing reads a pod's labels, annotations or owners.
		o.Labels, o.Annotations, o.OwnerReferences = nil, nil, nil
		trimPod(o)
	case *v1.Node:
		// The owner of status.volumesAttached alone stays of managedFields: it tells adc
		// another attach/detach controller writes the list (package othercontroller).
		othercontroller.TrimNodeManagedFields(o)
		managed := o.ManagedFields
		trimMeta(o)
		o.ManagedFields = managed
		trimNode(o)
	case *v1.PersistentVolume:
		trimMeta(o)
		// Its labels and annotations stay: translation reads the zone labels.
		trimToCompactMeta(&o.ObjectMeta)
		// Sizes decide nothing here; a one-entry ResourceList costs more than the rest of
		// the spec. Nor does the status: the claim's side says whether it is bound.
		o.Spec.Capacity = nil
		o.Status = v1.PersistentVolumeStatus{}
		// The binding is checked by the claim's namespace, name and UID.
		if ref := o.Spec.ClaimRef; ref != nil {
			o.Spec.ClaimRef = &v1.ObjectReference{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
		}
	case *v1.PersistentVolumeClaim:
		trimMeta(o)
		trimToCompactMeta(&o.ObjectMeta)
		o.Labels, o.Annotations = nil, nil
		// A pod's claim is resolved by name, owner, phase and the volume it is bound to.
		o.Spec = v1.PersistentVolumeClaimSpec{VolumeName: o.Spec.VolumeName}
		o.Status = v1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}
	case *storagev1.VolumeAttachment:
		// Its creator alone stays of managedFields (package othercontroller).
		creator := volumeattach.Creator(o)
		trimMeta(o)
		// Nothing reads its labels, annotations (the attacher's node ID), owners or finalizers.
		trimToCompactMeta(&o.ObjectMeta)
		o.ManagedFields = othercontroller.CreatorManagedFields(creator)
		o.Labels, o.Annotations, o.OwnerReferences = nil, nil, nil
		// The driver's publish context (device paths and the like) is the kubelet's to
		// read; adc lists CSI volumes without a device path, as upstream does.
		o.Status.AttachmentMetadata = nil
	case *storagev1.CSINode, *storagev1.CSIDriver:
		trimMeta(o)
	}
	return obj, nil
}

// WithTrimmedObjects is the informer factory option that installs adc's cache transform:
// TrimInformerObjects, then pods, claims and PersistentVolumes kept in compact forms only adc
// reads (cachedPod, cachedClaim, cachedPV). Use it only on a factory whose pod, claim and
// volume informers nothing but adc reads: a client-go lister over them would find no
// *v1.Pod.
func WithTrimmedObjects() informers.SharedInformerOption {
	return informers.WithTransform(Transform)
}

// Transform is TrimInformerObjects followed, for pods, claims and volumes, by their
// compact form. It is idempotent: a compact object passes through both.
func Transform(obj interface{}) (interface{}, error) {
	out, err := TrimInformerObjects(obj)
	if err != nil {
		return nil, err
	}
	return compact(out), nil
}

func compact(obj interface{}) interface{} {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		o.Obj = compact(o.Obj)
		return o
	case *v1.Pod:
		return compactPod(o)
	case *v1.PersistentVolumeClaim:
		return compactClaim(o)
	case *v1.PersistentVolume:
		return compactPV(o)
	case *storagev1.VolumeAttachment:
		return compactVA(o)
	}
	return obj
}

var _ cache.TransformFunc = Transform

var _ cache.TransformFunc = TrimInformerObjects

func trimMeta(obj interface{}) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[lastAppliedAnnotation]; ok {
			delete(a, lastAppliedAnnotation)
			m.SetAnnotations(a)
		}
	}
}

// trimPod keeps the pod's node, volumes, phase and whether a container still runs: what
// decides whether its volumes are wanted and where. Container statuses become one running
// status or none (migration.PodIsActive asks only whether any container runs), which is also
// all a cachedPod keeps.
func trimPod(p *v1.Pod) {
	vols := p.Spec.Volumes
	for i := range vols {
		trimVolumeSource(&vols[i].VolumeSource)
	}
	p.Spec = v1.PodSpec{NodeName: p.Spec.NodeName, Volumes: vols}
	status := v1.PodStatus{Phase: p.Status.Phase}
	if migration.AnyContainerRunning(p) {
		status.ContainerStatuses = []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	}
	p.Status = status
}

// trimVolumeSource empties the sources of volume types adc only classifies (never attaches
// and never names): the volume keeps its type, so it is decided exactly as before.
func trimVolumeSource(s *v1.VolumeSource) {
	switch {
	case s.ConfigMap != nil:
		s.ConfigMap = &v1.ConfigMapVolumeSource{}
	case s.Secret != nil:
		s.Secret = &v1.SecretVolumeSource{}
	case s.Projected != nil:
		s.Projected = &v1.ProjectedVolumeSource{}
	case s.DownwardAPI != nil:
		s.DownwardAPI = &v1.DownwardAPIVolumeSource{}
	}
}

// trimNode keeps the node's spec (taints), conditions (Ready and its age), attached and
// in-use volumes and kubelet version; it drops images, capacity, addresses and the rest of
// the kubelet's report.
func trimNode(n *v1.Node) {
	n.Status = v1.NodeStatus{
		Phase:           n.Status.Phase,
		Conditions:      n.Status.Conditions,
		VolumesAttached: n.Status.VolumesAttached,
		VolumesInUse:    n.Status.VolumesInUse,
		NodeInfo:        v1.NodeSystemInfo{KubeletVersion: n.Status.NodeInfo.KubeletVersion},
	}
}
