package adc

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// worldSpec is a small cluster the explorer starts from: nodes, CSI volumes, pods, and what
// is already attached. The external actors (the external-attacher, the kubelets, whoever
// deletes or creates pods) act only within it.
type worldSpec struct {
	name, about string
	nodes       []string
	volumes     []worldVolume
	pods        []worldPod
	// attached are VolumeAttachments that exist at the start, attached.
	attached []worldAttachment
	// policies are the DetachPolicies in force (none: the built-in rule).
	policies []*detachv1alpha1.DetachPolicy
	// shutdown names a node whose machine a step may shut down (once): its kubelet stops (its
	// mounts go with the machine, its last volumesInUse stays), the node leaves Ready and the
	// cloud's shutdown taint comes, in one Node update.
	shutdown string
}

type worldVolume struct {
	pv     string
	handle string
	rwo    bool
}

type worldPod struct {
	name, node string
	pvs        []string
	// present: the pod exists at the start; deletable: a step may delete it; creatable: a
	// step may create it (once).
	present, deletable, creatable bool
}

type worldAttachment struct {
	pv, node string
	// listed: the node's status.volumesAttached lists it; inUse: its kubelet reports it in
	// use (and has it mounted).
	listed, inUse bool
}

const (
	worldDriver    = "d.csi"
	worldNamespace = "ns"
)

// worlds are the explorer's small worlds, by name (the name is part of a replay line).
var worlds = map[string]*worldSpec{
	"rwo": {
		name:  "rwo",
		about: "2 nodes, 1 ReadWriteOnce CSI volume, a pod on each node that wants it; the pod on n-a may be deleted",
		nodes: []string{"n-a", "n-b"},
		volumes: []worldVolume{
			{pv: "pv-1", handle: "h1", rwo: true},
		},
		pods: []worldPod{
			{name: "pa", node: "n-a", pvs: []string{"pv-1"}, present: true, deletable: true},
			{name: "pb", node: "n-b", pvs: []string{"pv-1"}, present: true},
		},
	},
	"twovol": {
		name:  "twovol",
		about: "1 node, 2 ReadWriteOnce CSI volumes, one pod per volume; either pod may be deleted",
		nodes: []string{"n-a"},
		volumes: []worldVolume{
			{pv: "pv-1", handle: "h1", rwo: true},
			{pv: "pv-2", handle: "h2", rwo: true},
		},
		pods: []worldPod{
			{name: "pa1", node: "n-a", pvs: []string{"pv-1"}, present: true, deletable: true},
			{name: "pa2", node: "n-a", pvs: []string{"pv-2"}, present: true, deletable: true},
		},
	},
	"recreate": {
		name: "recreate",
		about: "1 node; the volume's pod is gone and its VolumeAttachment (attached, no longer listed) is to be detached, " +
			"while a new pod for the volume may come to the same node: the VolumeAttachment name is reused",
		nodes:   []string{"n-a"},
		volumes: []worldVolume{{pv: "pv-1", handle: "h1", rwo: true}},
		pods: []worldPod{
			{name: "pa2", node: "n-a", pvs: []string{"pv-1"}, creatable: true, deletable: true},
		},
		attached: []worldAttachment{{pv: "pv-1", node: "n-a"}},
	},
	"shutdown": {
		name: "shutdown",
		about: "2 nodes, 1 ReadWriteOnce CSI volume attached, listed and in use on n-a, a pod on each node that wants it; " +
			"n-a's machine may shut down (not Ready + the cloud's shutdown taint), which a DetachPolicy accepts as evidence; either pod may be deleted",
		nodes:   []string{"n-a", "n-b"},
		volumes: []worldVolume{{pv: "pv-1", handle: "h1", rwo: true}},
		pods: []worldPod{
			{name: "pa", node: "n-a", pvs: []string{"pv-1"}, present: true, deletable: true},
			{name: "pb", node: "n-b", pvs: []string{"pv-1"}, present: true, deletable: true},
		},
		attached: []worldAttachment{{pv: "pv-1", node: "n-a", listed: true, inUse: true}},
		policies: []*detachv1alpha1.DetachPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "cloud"}, Spec: detachv1alpha1.DetachPolicySpec{
			Volumes:  detachv1alpha1.VolumeSelector{Drivers: []string{worldDriver}},
			Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceCloudShutdown},
			Timeout:  detachv1alpha1.TimeoutNever,
		}}},
		shutdown: "n-a",
	},
}

// worldOrder is the order worlds run in.
var worldOrder = []string{"rwo", "twovol", "recreate", "shutdown"}

func (w *worldSpec) volume(pv string) worldVolume {
	for _, v := range w.volumes {
		if v.pv == pv {
			return v
		}
	}
	panic("interleave: unknown volume " + pv)
}

// uniqueName is the name the volume has in node status (volumesAttached, volumesInUse).
func (w *worldSpec) uniqueName(pv string) string {
	return migration.CSIUniqueName(worldDriver, w.volume(pv).handle)
}

// pvOfUnique returns the volume with this unique name.
func (h *harness) pvOfUnique(unique string) string {
	for _, v := range h.w.volumes {
		if h.w.uniqueName(v.pv) == unique {
			return v.pv
		}
	}
	return ""
}

func (w *worldSpec) vaName(pv, node string) string {
	return migration.VolumeAttachmentName(w.volume(pv).handle, worldDriver, node)
}

// shortener replaces VolumeAttachment names (csi-<sha256>) by va(<pv>@<node>) in traces.
func (w *worldSpec) shortener() *strings.Replacer {
	var pairs []string
	for _, v := range w.volumes {
		for _, n := range w.nodes {
			pairs = append(pairs, w.vaName(v.pv, n), "va("+v.pv+"@"+n+")")
		}
	}
	return strings.NewReplacer(pairs...)
}

func claimOfPV(pv string) string { return "claim-" + pv }

func (w *worldSpec) nodeObject(name string, start time.Time) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "100",
			Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(-time.Hour))}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.36.3"},
		},
	}
	for _, a := range w.attached {
		if a.node != name {
			continue
		}
		u := w.uniqueName(a.pv)
		if a.listed {
			n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(u)})
		}
		if a.inUse {
			n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(u))
		}
	}
	return n
}

func (w *worldSpec) podObject(p worldPod) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: worldNamespace, Name: p.name, UID: types.UID("uid-" + p.name)},
		Spec:       v1.PodSpec{NodeName: p.node},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	for _, pv := range p.pvs {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "vol-" + pv, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimOfPV(pv)}}})
	}
	return pod
}

// staticObjects are the objects no step changes: CSIDriver, CSINodes, PVs and PVCs.
func (w *worldSpec) staticObjects() (drivers []*storagev1.CSIDriver, csiNodes []*storagev1.CSINode, pvs []*v1.PersistentVolume, pvcs []*v1.PersistentVolumeClaim) {
	drivers = append(drivers, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: worldDriver, ResourceVersion: "1"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})
	for _, n := range w.nodes {
		csiNodes = append(csiNodes, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n, ResourceVersion: "1"},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: worldDriver, NodeID: "id-" + n}}}})
	}
	for _, v := range w.volumes {
		modes := []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		if v.rwo {
			modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
		}
		claim := claimOfPV(v.pv)
		pvs = append(pvs, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.pv, ResourceVersion: "1"},
			Spec: v1.PersistentVolumeSpec{AccessModes: modes,
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: worldDriver, VolumeHandle: v.handle}},
				ClaimRef:               &v1.ObjectReference{Namespace: worldNamespace, Name: claim, UID: types.UID("uid-" + claim)}},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}})
		pvcs = append(pvcs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: worldNamespace, Name: claim, UID: types.UID("uid-" + claim), ResourceVersion: "1"},
			Spec:   v1.PersistentVolumeClaimSpec{VolumeName: v.pv, AccessModes: modes},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
	}
	return drivers, csiNodes, pvs, pvcs
}

// attachedVA is a VolumeAttachment of the starting state: attached, with the attacher's
// finalizer.
func (w *worldSpec) attachedVA(a worldAttachment) *storagev1.VolumeAttachment {
	va := volumeattach.NewVolumeAttachment(w.vaName(a.pv, a.node), worldDriver, a.node,
		storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(a.pv)})
	va.Finalizers = []string{attacherFinalizer}
	va.Status.Attached = true
	return va
}

// pvOfVA returns the PersistentVolume a VolumeAttachment attaches.
func pvOfVA(va *storagev1.VolumeAttachment) string {
	if va.Spec.Source.PersistentVolumeName != nil {
		return *va.Spec.Source.PersistentVolumeName
	}
	return ""
}
