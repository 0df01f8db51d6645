package migration

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClaimLookup resolves claims and volumes from whatever the caller has listed: informer
// listers in the controller, an ObjectIndex in `adc plan` and tests. Both methods return nil
// when the object does not exist.
type ClaimLookup interface {
	PersistentVolumeClaim(namespace, name string) *v1.PersistentVolumeClaim
	PersistentVolume(name string) *v1.PersistentVolume
}

// PodVolume is one volume of a pod, resolved as far as the listed objects allow. Exactly one
// of PV, Inline and Pending is set.
type PodVolume struct {
	// Name is the pod's name for the volume (spec.volumes[].name).
	Name string
	// PVName is the PersistentVolume the claim is bound to, when known (also when Pending).
	PVName string
	// ClaimName is the PersistentVolumeClaim behind the volume, for claim and generic
	// ephemeral volumes; empty for inline volumes.
	ClaimName string
	// PV is the bound PersistentVolume of a claim-backed volume.
	PV *v1.PersistentVolume
	// Inline is the pod's own volume when it is not backed by a claim.
	Inline *v1.Volume
	// Pending is the decision to use when the volume cannot be resolved: a missing claim, an
	// unbound or pending claim, or a claim bound to a PV that does not exist (yet) => wait,
	// since the objects may still appear; a Lost claim, a PV bound to another claim, or a
	// generic ephemeral claim not owned by the pod => error, which needs an operator.
	Pending *Decision
}

// PodIsActive reports whether a pod's volumes belong in the desired state: it is scheduled
// (spec.nodeName set) and not terminated. Terminated follows upstream's IsPodTerminated:
// phase Succeeded or Failed, or deleted with no container running.
func PodIsActive(pod *v1.Pod) bool {
	if pod == nil || pod.Spec.NodeName == "" {
		return false
	}
	return PodActive(pod.Status.Phase, pod.DeletionTimestamp != nil, AnyContainerRunning(pod))
}

// PodActive is PodIsActive for a scheduled pod, from the three facts it depends on; caches
// that keep a pod in a compact form answer it without rebuilding the pod.
func PodActive(phase v1.PodPhase, deleting, anyContainerRunning bool) bool {
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		return false
	}
	return !deleting || anyContainerRunning
}

// AnyContainerRunning reports whether some container of the pod (init, app or ephemeral) is
// neither waiting nor terminated: what keeps a deleted pod's volumes wanted. Caches that keep
// less than the pod's statuses keep this.
func AnyContainerRunning(pod *v1.Pod) bool {
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses,
		pod.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			if statuses[i].State.Terminated == nil && statuses[i].State.Waiting == nil {
				return true
			}
		}
	}
	return false
}

// PodVolumes resolves every volume of pod, in spec order. PersistentVolumeClaim volumes and
// generic ephemeral volumes (whose claim is named <pod>-<volume> and must be controlled by
// the pod) are resolved through lookup to their PV; every other volume is returned as Inline.
// It never fails: what cannot be resolved gets a Pending decision saying why.
func PodVolumes(pod *v1.Pod, lookup ClaimLookup) []PodVolume {
	if pod == nil {
		return nil
	}
	return VolumesOf(&pod.ObjectMeta, pod.Spec.Volumes, lookup)
}

// VolumesOf is PodVolumes of a pod given by its metadata (namespace, name and UID are read)
// and its spec.volumes: a cache that keeps pods in a compact form resolves their volumes
// without rebuilding whole pods. Inline volumes point into volumes.
func VolumesOf(pod metav1.Object, volumes []v1.Volume, lookup ClaimLookup) []PodVolume {
	out := make([]PodVolume, 0, len(volumes))
	for i := range volumes {
		vol := &volumes[i]
		pv := PodVolume{Name: vol.Name}
		switch {
		case vol.PersistentVolumeClaim != nil:
			pv.ClaimName = vol.PersistentVolumeClaim.ClaimName
			resolveClaim(&pv, pod, lookup, false)
		case vol.Ephemeral != nil:
			pv.ClaimName = pod.GetName() + "-" + vol.Name
			resolveClaim(&pv, pod, lookup, true)
		default:
			pv.Inline = vol
		}
		out = append(out, pv)
	}
	return out
}

func resolveClaim(pv *PodVolume, pod metav1.Object, lookup ClaimLookup, ephemeral bool) {
	namespace := pod.GetNamespace()
	claim := strconv.Quote(namespace + "/" + pv.ClaimName)
	if pv.ClaimName == "" {
		pv.Pending = &Decision{Mechanism: MechanismError, Reason: "pod volume " + strconv.Quote(pv.Name) + " names no PersistentVolumeClaim; fix the pod spec"}
		return
	}
	if lookup == nil {
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolumeClaim " + claim + " cannot be looked up (no claim lookup); waiting"}
		return
	}
	pvc := lookup.PersistentVolumeClaim(namespace, pv.ClaimName)
	if pvc == nil {
		why := "does not exist yet; waiting for it to be created"
		if ephemeral {
			why = "does not exist yet; waiting for the ephemeral volume controller to create it for the pod"
		}
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolumeClaim " + claim + " " + why}
		return
	}
	if ephemeral && !metav1.IsControlledBy(pvc, pod) {
		pv.Pending = &Decision{Mechanism: MechanismError, Reason: "PersistentVolumeClaim " + claim + " was not created for pod " + strconv.Quote(namespace+"/"+pod.GetName()) +
			" (the pod is not its controller), so the generic ephemeral volume " + strconv.Quote(pv.Name) + " cannot use it; delete or rename the conflicting claim"}
		return
	}
	if pvc.Status.Phase == v1.ClaimLost {
		pv.PVName = pvc.Spec.VolumeName
		pv.Pending = &Decision{Mechanism: MechanismError, Reason: "PersistentVolumeClaim " + claim + " is Lost (its PersistentVolume " + strconv.Quote(pvc.Spec.VolumeName) +
			" is gone); the data cannot be attached: restore the PersistentVolume or recreate the claim"}
		return
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != v1.ClaimBound {
		pv.PVName = pvc.Spec.VolumeName
		phase := string(pvc.Status.Phase)
		if phase == "" {
			phase = string(v1.ClaimPending)
		}
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolumeClaim " + claim + " is not bound yet (phase " + phase + "); waiting for it to be bound"}
		return
	}
	pv.PVName = pvc.Spec.VolumeName
	vol := lookup.PersistentVolume(pvc.Spec.VolumeName)
	if vol == nil {
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolumeClaim " + claim + " is bound to PersistentVolume " + strconv.Quote(pvc.Spec.VolumeName) + ", which does not exist yet; waiting for it"}
		return
	}
	if ref := vol.Spec.ClaimRef; ref == nil {
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolume " + strconv.Quote(vol.Name) + " is not bound to PersistentVolumeClaim " + claim + " yet (no claimRef); waiting for the binding to finish"}
		return
	} else if ref.Name == pvc.Name && ref.Namespace == pvc.Namespace && ref.UID == "" && pvc.UID != "" {
		pv.Pending = &Decision{Mechanism: MechanismWait, WaitCause: WaitVolumeBinding, Reason: "PersistentVolume " + strconv.Quote(vol.Name) + " is pre-bound to PersistentVolumeClaim " + claim + " but the binding has not finished (claimRef has no uid); waiting for it"}
		return
	} else if ref.UID != pvc.UID || ref.Name != pvc.Name || ref.Namespace != pvc.Namespace {
		pv.Pending = &Decision{Mechanism: MechanismError, Reason: "PersistentVolumeClaim " + claim + " names PersistentVolume " + strconv.Quote(vol.Name) +
			" but that volume is bound to claim " + strconv.Quote(ref.Namespace+"/"+ref.Name) + "; fix the claim's spec.volumeName or the volume's claimRef"}
		return
	}
	pv.PV = vol
}

// DecidePodVolume decides one resolved pod volume on one node: the Pending decision when the
// volume could not be resolved, else Decide on its PV or inline volume. It is the single entry
// point `adc plan` and the controller share, so both explain a volume the same way.
func DecidePodVolume(cfg *Config, pv PodVolume, podNamespace string, node NodeObjects, drivers DriverLookup) Decision {
	if pv.Pending != nil {
		return *pv.Pending
	}
	return Decide(cfg, &Input{
		PV:           pv.PV,
		InlineVolume: pv.Inline,
		PodNamespace: podNamespace,
		NodeName:     node.Name,
		Node:         node.Node,
		CSINode:      node.CSINode,
		CSINodeInfo:  node.CSINodeInfo,
		CSIDrivers:   drivers,
	})
}

// Lookup is what deciding a pod's volumes reads besides the pod and its node: claims,
// volumes and CSI drivers. The controller's informer lookups and an ObjectIndex implement it.
type Lookup interface {
	ClaimLookup
	DriverLookup
}

// DecidedVolume is one volume of a pod and what to do with it on the pod's node.
type DecidedVolume struct {
	PodVolume
	Decision Decision
}

// DecidePod decides every volume of a pod on its node: VolumesOf, then DecidePodVolume for
// each. It is the one decision path the controller, `adc plan` and `adc status` share, so
// all three explain a volume the same way. The caller checks that the pod is active;
// the pod is given by its metadata and spec.volumes (a compact cache need not rebuild it).
func DecidePod(cfg *Config, pod metav1.Object, volumes []v1.Volume, node NodeObjects, lookup Lookup) []DecidedVolume {
	vols := VolumesOf(pod, volumes, lookup)
	out := make([]DecidedVolume, len(vols))
	for i, pv := range vols {
		out[i] = DecidedVolume{PodVolume: pv, Decision: DecidePodVolume(cfg, pv, pod.GetNamespace(), node, lookup)}
	}
	return out
}
