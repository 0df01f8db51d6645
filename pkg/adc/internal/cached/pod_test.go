package cached

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
)

// TestCachedPodRebuildsTheTrimmedPod proves the compact cache form loses nothing the trimmed
// pod has: every kind of volume and a deleted pod with a running container come back
// exactly, and the indexers and event handlers read both forms alike.
func TestCachedPodRebuildsTheTrimmedPod(t *testing.T) {
	deleted := metav1.Now()
	running := []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: deleted}}}}
	stopped := []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "7",
		Labels: map[string]string{"app": "db"}, Annotations: map[string]string{"team": "storage"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "uid-db", Controller: ptr.To(true)}}}
	vol := func(name string, s v1.VolumeSource) v1.Volume { return v1.Volume{Name: name, VolumeSource: s} }
	cases := []struct {
		name       string
		pod        v1.Pod
		wantClaims []string
	}{
		{name: "unscheduled pod without volumes", pod: v1.Pod{ObjectMeta: meta}},
		{name: "every volume kind", pod: v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{
			vol("data", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0", ReadOnly: true}}),
			vol("scratch", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}),
			vol("pd", v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1", FSType: "ext4"}}),
			vol("csi", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "inline.csi.example.com", VolumeAttributes: map[string]string{"a": "b"}}}),
			vol("cm", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}),
			vol("secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}),
			vol("token", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{}}}}),
			vol("info", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}),
			vol("tmp", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}),
			vol("broken", v1.VolumeSource{}),
		}}, Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: running}},
			wantClaims: []string{"data-0", "p-scratch"}},
		{name: "deleted pod whose init container runs", pod: v1.Pod{ObjectMeta: withDeletion(meta, &deleted),
			Spec:   v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: running, ContainerStatuses: stopped}}},
		{name: "deleted pod with every container stopped", pod: v1.Pod{ObjectMeta: withDeletion(meta, &deleted),
			Spec:   v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: stopped}}},
		{name: "succeeded pod", pod: v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: stopped}}},
		{name: "running pod", pod: v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{NodeName: "n1"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: running}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			trimmed, cached := checkCompactForm[v1.Pod, *cachedPod](t, &tc.pod, PodOf)
			wholeNS, wholeName, wholeClaims, _ := PodClaims(&tc.pod)
			ns, name, claims, _ := PodClaims(cached)
			if ns != wholeNS || name != wholeName || !reflect.DeepEqual(claims, wholeClaims) {
				t.Errorf("claim users differ: whole pod %s %v, cached pod %s %v", wholeName, wholeClaims, name, claims)
			}
			if !reflect.DeepEqual(claims, tc.wantClaims) {
				t.Errorf("claims %v, want %v", claims, tc.wantClaims)
			}
			if a, _ := PlacementOf(&tc.pod); a != mustPlacement(t, cached) {
				t.Errorf("placement differs: whole pod %+v, cached pod %+v", a, mustPlacement(t, cached))
			}
			meta, vols, ok := PodVolumes(cached)
			if !ok || meta.GetNamespace() != trimmed.Namespace || meta.GetName() != trimmed.Name || meta.GetUID() != trimmed.UID ||
				!reflect.DeepEqual(vols, trimmed.Spec.Volumes) {
				t.Errorf("volumes of the cached pod %v %+v, want %+v", ok, vols, trimmed.Spec.Volumes)
			}
			if pod, _ := PodOf(cached); !reflect.DeepEqual(pod, trimmed) {
				t.Errorf("the rebuilt pod %+v, want the trimmed pod", pod)
			}
			if got, want := mustPlacement(t, cached).Active(), migration.PodIsActive(&tc.pod); got != want {
				t.Errorf("active from the cached placement = %v, migration.PodIsActive = %v", got, want)
			}
		})
	}
	tomb, err := Transform(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: cases[1].pod.DeepCopy()})
	if _, ok := tomb.(cache.DeletedFinalStateUnknown).Obj.(*cachedPod); err != nil || !ok {
		t.Errorf("a tombstone's pod is not cached: %v", err)
	}
}

func withDeletion(m metav1.ObjectMeta, at *metav1.Time) metav1.ObjectMeta {
	m.DeletionTimestamp = at
	return m
}

func mustPlacement(t *testing.T, obj interface{}) Placement {
	t.Helper()
	p, ok := PlacementOf(obj)
	if !ok {
		t.Fatalf("no placement for %T", obj)
	}
	return p
}
