package adc

import (
	"strings"
	"testing"
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

// worldVolume is a PersistentVolume of the world. The disk it names is its CSI identity,
// driver and handle (translated for an in-tree one): two worldVolumes with the same identity
// are two PersistentVolumes of one disk, and the invariants judge by the disk.
type worldVolume struct {
	pv     string
	handle string
	rwo    bool
	// driver is the CSI driver ("": worldDriver).
	driver string
	// gce: an in-tree GCE PD PersistentVolume (pdName and zone label), which the nodes
	// migrate to gcePDDriver: driver and handle are then its translation.
	gce *gceDisk
	// deleted: the PersistentVolume is gone before the start (deleted while its
	// VolumeAttachment still exists); neither it nor a claim of it is in the API.
	deleted bool
}

// gceDisk is the in-tree source of a GCE PD PersistentVolume.
type gceDisk struct{ pdName, zone string }

// csi is the volume's CSI identity: its driver and handle, translated for an in-tree one as
// csi-translation-lib does (zonal, project UNSPECIFIED).
func (v worldVolume) csi() (driver, handle string) {
	switch {
	case v.gce != nil:
		return gcePDDriver, "projects/UNSPECIFIED/zones/" + v.gce.zone + "/disks/" + v.gce.pdName
	case v.driver != "":
		return v.driver, v.handle
	}
	return worldDriver, v.handle
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
	// gcePDDriver is the CSI driver the in-tree GCE PD plugin migrates to.
	gcePDDriver  = "pd.csi.storage.gke.io"
	gcePDPlugin  = "kubernetes.io/gce-pd"
	worldGCEZone = "z-1"
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
	"twopv": {
		name: "twopv",
		about: "2 nodes, 2 ReadWriteOnce PersistentVolumes naming one disk (same driver and handle), a pod on each node, " +
			"each using one of them; either pod may be deleted",
		nodes: []string{"n-a", "n-b"},
		volumes: []worldVolume{
			{pv: "pv-1", handle: "h1", rwo: true},
			{pv: "pv-2", handle: "h1", rwo: true},
		},
		pods: []worldPod{
			{name: "pa", node: "n-a", pvs: []string{"pv-1"}, present: true, deletable: true},
			{name: "pb", node: "n-b", pvs: []string{"pv-2"}, present: true, deletable: true},
		},
	},
	"recreate-pv": {
		name: "recreate-pv",
		about: "2 nodes; the PersistentVolume pv-old was deleted and re-created as pv-new for the same disk while its VolumeAttachment " +
			"(attached, listed, in use) stays on n-a, which no pod uses any more; a pod on n-b uses pv-new, and a pod using pv-new may come to n-a " +
			"(the VolumeAttachment name is the old one's); either pod may be deleted",
		nodes: []string{"n-a", "n-b"},
		volumes: []worldVolume{
			{pv: "pv-old", handle: "h1", rwo: true, deleted: true},
			{pv: "pv-new", handle: "h1", rwo: true},
		},
		pods: []worldPod{
			{name: "pb", node: "n-b", pvs: []string{"pv-new"}, present: true, deletable: true},
			{name: "pa", node: "n-a", pvs: []string{"pv-new"}, creatable: true, deletable: true},
		},
		attached: []worldAttachment{{pv: "pv-old", node: "n-a", listed: true, inUse: true}},
	},
	"intree-csi": {
		name: "intree-csi",
		about: "2 nodes that migrate " + gcePDPlugin + ", an in-tree GCE PD PersistentVolume and a CSI PersistentVolume of the same disk " +
			"(its translation), both ReadWriteOnce, a pod on each node using one of them; either pod may be deleted",
		nodes: []string{"n-a", "n-b"},
		volumes: []worldVolume{
			{pv: "pv-gce", rwo: true, gce: &gceDisk{pdName: "disk-1", zone: worldGCEZone}},
			{pv: "pv-csi", rwo: true, driver: gcePDDriver, handle: "projects/UNSPECIFIED/zones/" + worldGCEZone + "/disks/disk-1"},
		},
		pods: []worldPod{
			{name: "pa", node: "n-a", pvs: []string{"pv-gce"}, present: true, deletable: true},
			{name: "pb", node: "n-b", pvs: []string{"pv-csi"}, present: true, deletable: true},
		},
	},
}

// worldOrder is the order worlds run in.
var worldOrder = []string{"rwo", "twovol", "recreate", "shutdown", "twopv", "recreate-pv", "intree-csi"}

func (w *worldSpec) volume(pv string) worldVolume {
	for _, v := range w.volumes {
		if v.pv == pv {
			return v
		}
	}
	panic("interleave: unknown volume " + pv)
}

// uniqueName is the name the volume has in node status (volumesAttached, volumesInUse): the
// unique name of its disk.
func (w *worldSpec) uniqueName(pv string) string {
	return migration.CSIUniqueName(w.volume(pv).csi())
}

// disks are the unique names of the world's disks, in the order of their first volume.
func (w *worldSpec) disks() []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range w.volumes {
		if u := w.uniqueName(v.pv); !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// pvsOf are the PersistentVolumes naming the disk unique.
func (w *worldSpec) pvsOf(unique string) []string {
	var out []string
	for _, v := range w.volumes {
		if w.uniqueName(v.pv) == unique {
			out = append(out, v.pv)
		}
	}
	return out
}

// diskRWO reports whether the disk is ReadWriteOnce: any of its PersistentVolumes says so.
func (w *worldSpec) diskRWO(unique string) bool {
	for _, pv := range w.pvsOf(unique) {
		if w.volume(pv).rwo {
			return true
		}
	}
	return false
}

// diskOfVA returns the disk (unique name) a VolumeAttachment attaches: by its
// PersistentVolume, as the world knows it (a deleted one too), else by its own name
// (migration.VolumeAttachmentIsFor); "" when neither names a disk of the world.
func (w *worldSpec) diskOfVA(va *storagev1.VolumeAttachment) string {
	if pv := pvOfVA(va); pv != "" {
		for _, v := range w.volumes {
			if v.pv == pv {
				return w.uniqueName(pv)
			}
		}
	}
	for _, u := range w.disks() {
		if migration.VolumeAttachmentIsFor(va, u) {
			return u
		}
	}
	return ""
}

func (w *worldSpec) vaName(pv, node string) string {
	driver, handle := w.volume(pv).csi()
	return migration.VolumeAttachmentName(handle, driver, node)
}

// shortener replaces VolumeAttachment names (csi-<sha256>) by va(<pv>@<node>) in traces;
// the object of a disk several PersistentVolumes name is va(<pv>|<pv>@<node>).
func (w *worldSpec) shortener() *strings.Replacer {
	var pairs []string
	for _, u := range w.disks() {
		pvs := w.pvsOf(u)
		for _, n := range w.nodes {
			pairs = append(pairs, w.vaName(pvs[0], n), "va("+strings.Join(pvs, "|")+"@"+n+")")
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

// drivers are the CSI drivers of the world's volumes, in the order of their first volume.
func (w *worldSpec) drivers() []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range w.volumes {
		if d, _ := v.csi(); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// staticObjects are the objects no step changes: CSIDriver, CSINodes, PVs and PVCs.
func (w *worldSpec) staticObjects() (drivers []*storagev1.CSIDriver, csiNodes []*storagev1.CSINode, pvs []*v1.PersistentVolume, pvcs []*v1.PersistentVolumeClaim) {
	migrated := false
	for _, v := range w.volumes {
		migrated = migrated || v.gce != nil
	}
	for _, d := range w.drivers() {
		drivers = append(drivers, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d, ResourceVersion: "1"},
			Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})
	}
	for _, n := range w.nodes {
		cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n, ResourceVersion: "1"}}
		for _, d := range w.drivers() {
			cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: "id-" + n})
		}
		if migrated {
			cn.Annotations = map[string]string{migration.MigratedPluginsAnnotation: gcePDPlugin}
		}
		csiNodes = append(csiNodes, cn)
	}
	for _, v := range w.volumes {
		if v.deleted {
			continue
		}
		modes := []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		if v.rwo {
			modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
		}
		claim := claimOfPV(v.pv)
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.pv, ResourceVersion: "1"},
			Spec: v1.PersistentVolumeSpec{AccessModes: modes,
				ClaimRef: &v1.ObjectReference{Namespace: worldNamespace, Name: claim, UID: types.UID("uid-" + claim)}},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
		if v.gce != nil {
			pv.Labels = map[string]string{v1.LabelTopologyZone: v.gce.zone}
			pv.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: v.gce.pdName}
		} else {
			driver, handle := v.csi()
			pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
		}
		pvs = append(pvs, pv)
		pvcs = append(pvcs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: worldNamespace, Name: claim, UID: types.UID("uid-" + claim), ResourceVersion: "1"},
			Spec:   v1.PersistentVolumeClaimSpec{VolumeName: v.pv, AccessModes: modes},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
	}
	return drivers, csiNodes, pvs, pvcs
}

// attachedVA is a VolumeAttachment of the starting state: attached, with the attacher's
// finalizer.
func (w *worldSpec) attachedVA(a worldAttachment) *storagev1.VolumeAttachment {
	driver, _ := w.volume(a.pv).csi()
	va := volumeattach.NewVolumeAttachment(w.vaName(a.pv, a.node), driver, a.node,
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

// TestInterleaveWorldIdentity checks the worlds' own account of which PersistentVolumes name
// one disk (worldVolume.csi, what the invariants judge by) against the translation adc uses:
// a world that meant one disk and got two would test nothing about identity.
func TestInterleaveWorldIdentity(t *testing.T) {
	for _, name := range worldOrder {
		w := worlds[name]
		_, _, pvs, _ := w.staticObjects()
		for _, pv := range pvs {
			driver, handle, ok := migration.PVCSIIdentity(pv)
			wantDriver, wantHandle := w.volume(pv.Name).csi()
			if !ok || driver != wantDriver || handle != wantHandle {
				t.Errorf("world %s, PersistentVolume %s: adc names it %s^%s (ok=%t), the world %s^%s", name, pv.Name, driver, handle, ok, wantDriver, wantHandle)
			}
		}
	}
}
