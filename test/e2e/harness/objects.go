package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PauseImage is the image of the harness's pods; the kubelets' fake runtime "pulls" it.
const PauseImage = "registry.k8s.io/pause:3.10"

// VAName is the VolumeAttachment name the kubelet and the external-attacher expect: csi- and
// the sha256 of handle, driver and node, concatenated.
func VAName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// UniqueName is a CSI volume's name in node status.volumesAttached / volumesInUse.
func UniqueName(driver, handle string) string {
	return "kubernetes.io/csi/" + driver + "^" + handle
}

// GCEPDHandle is the CSI handle csi-translation-lib gives an in-tree gce-pd PV named pdName
// without a zone label.
func GCEPDHandle(pdName string) string {
	return "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + pdName
}

// Volume describes a PersistentVolume and the PersistentVolumeClaim bound to it.
type Volume struct {
	// Name names both the PVC (in the namespace) and, prefixed with the namespace, the PV.
	Name string
	// Driver and Handle make a CSI PV.
	Driver, Handle string
	// GCEPD, instead, makes an in-tree gce-pd PV of that disk name (migrated to GCEPDDriver).
	GCEPD string
	// AccessModes default to ReadWriteOnce.
	AccessModes []v1.PersistentVolumeAccessMode
}

// CreateVolume creates the PVC and its PV bound to each other as the PV controller (which
// envtest lacks) would: PV claimRef with the PVC's UID, both Bound.
func (s *Stack) CreateVolume(ctx context.Context, ns string, vol Volume) (*v1.PersistentVolume, error) {
	modes := vol.AccessModes
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	size := resource.MustParse("1Gi")
	pvName := ns + "-" + vol.Name
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: vol.Name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
			VolumeName:       pvName,
			StorageClassName: new(string),
		},
	}
	pvc, err := s.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("harness: creating PVC %s/%s: %w", ns, vol.Name, err)
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   modes,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
	}
	switch {
	case vol.GCEPD != "":
		pv.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: vol.GCEPD, FSType: "ext4"}
	case vol.Driver != "" && vol.Handle != "":
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: vol.Driver, VolumeHandle: vol.Handle, FSType: "ext4"}
	default:
		return nil, fmt.Errorf("harness: volume %s needs Driver and Handle, or GCEPD", vol.Name)
	}
	pv, err = s.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("harness: creating PV %s: %w", pvName, err)
	}
	pv.Status.Phase = v1.VolumeBound
	if pv, err = s.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("harness: binding PV %s: %w", pvName, err)
	}
	pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: modes, Capacity: v1.ResourceList{v1.ResourceStorage: size}}
	if _, err := s.Client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("harness: binding PVC %s/%s: %w", ns, vol.Name, err)
	}
	return pv, nil
}

// CreateNamespace creates a namespace for one test. envtest has no namespace controller, so
// it is never deleted: use a fresh name per test.
func (s *Stack) CreateNamespace(ctx context.Context, name string) error {
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("harness: creating namespace %s: %w", name, err)
	}
	return nil
}

// PodSpec returns a pod on node (no scheduler in envtest) mounting claims, with nothing the
// kubelet would need a service account or a real runtime for.
func PodSpec(ns, name, node string, claims ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: new(bool),
			EnableServiceLinks:           new(bool),
			Containers:                   []v1.Container{{Name: "app", Image: PauseImage, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
	for i, c := range claims {
		vol := fmt.Sprintf("v%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: vol, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: vol, MountPath: "/data/" + vol})
	}
	return pod
}

// CreatePod creates PodSpec(ns, name, node, claims...).
func (s *Stack) CreatePod(ctx context.Context, ns, name, node string, claims ...string) (*v1.Pod, error) {
	pod, err := s.Client.CoreV1().Pods(ns).Create(ctx, PodSpec(ns, name, node, claims...), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("harness: creating pod %s/%s on %s: %w", ns, name, node, err)
	}
	return pod, nil
}

// WaitPodsRunning waits until every pod of names in ns is in phase Running (the kubelet can
// set Ready earlier than that), and says which are not when it gives up.
func (s *Stack) WaitPodsRunning(ctx context.Context, ns string, names []string, timeout time.Duration) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		running := map[string]bool{}
		phases := map[string]v1.PodPhase{}
		for _, p := range pods.Items {
			phases[p.Name] = p.Status.Phase
			if p.Status.Phase == v1.PodRunning {
				running[p.Name] = true
			}
		}
		pending = pending[:0]
		for n := range want {
			if !running[n] {
				pending = append(pending, fmt.Sprintf("%s(%s)", n, phases[n]))
			}
		}
		sort.Strings(pending)
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("harness: %d of %d pods in %s not Running within %s: %s: %w", len(pending), len(names), ns, timeout, strings.Join(pending, " "), err)
	}
	return nil
}

// WaitPodGone waits until the pod is deleted (the kubelet removes it after stopping it).
func (s *Stack) WaitPodGone(ctx context.Context, ns, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := s.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("harness: pod %s/%s not gone within %s: %w", ns, name, timeout, err)
	}
	return nil
}
