package adc

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
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
		wantClaims []claimRef
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
			wantClaims: []claimRef{{"ns", "data-0"}, {"ns", "p-scratch"}}},
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
			trimmed, cached := checkCompactForm[v1.Pod, *cachedPod](t, &tc.pod, podOf)
			whole, _ := podNodeName(&tc.pod)
			fromCache, _ := podNodeName(cached)
			if !reflect.DeepEqual(whole, fromCache) {
				t.Errorf("node index keys differ: whole pod %v, cached pod %v", whole, fromCache)
			}
			wholeName, wholeClaims := podClaimRefs(&tc.pod)
			name, claims := podClaimRefs(cached)
			if name != wholeName || !reflect.DeepEqual(claims, wholeClaims) {
				t.Errorf("claim users differ: whole pod %s %v, cached pod %s %v", wholeName, wholeClaims, name, claims)
			}
			if !reflect.DeepEqual(claims, tc.wantClaims) {
				t.Errorf("claims %v, want %v", claims, tc.wantClaims)
			}
			if a, _ := placementOf(&tc.pod); a != mustPlacement(t, cached) {
				t.Errorf("placement differs: whole pod %+v, cached pod %+v", a, mustPlacement(t, cached))
			}
			meta, vols, ok := podVolumesOf(cached)
			if !ok || meta.GetNamespace() != trimmed.Namespace || meta.GetName() != trimmed.Name || meta.GetUID() != trimmed.UID ||
				!reflect.DeepEqual(vols, trimmed.Spec.Volumes) {
				t.Errorf("volumes of the cached pod %v %+v, want %+v", ok, vols, trimmed.Spec.Volumes)
			}
			if pod := (&pair{podObj: cached}).podObject(); !reflect.DeepEqual(pod, trimmed) {
				t.Errorf("the pair's pod %+v, want the trimmed pod", pod)
			}
			if got, want := mustPlacement(t, cached).active(), migration.PodIsActive(&tc.pod); got != want {
				t.Errorf("active from the cached placement = %v, migration.PodIsActive = %v", got, want)
			}
		})
	}
	tomb, err := cacheTransform(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: cases[1].pod.DeepCopy()})
	if _, ok := tomb.(cache.DeletedFinalStateUnknown).Obj.(*cachedPod); err != nil || !ok {
		t.Errorf("a tombstone's pod is not cached: %v", err)
	}
}

func withDeletion(m metav1.ObjectMeta, at *metav1.Time) metav1.ObjectMeta {
	m.DeletionTimestamp = at
	return m
}

func mustPlacement(t *testing.T, obj interface{}) podPlacement {
	t.Helper()
	p, ok := placementOf(obj)
	if !ok {
		t.Fatalf("no placement for %T", obj)
	}
	return p
}

// TestPodHandlerEnqueuesWhatChangesDecisions: the pod handler reads whole and cached pods
// alike and enqueues a node when what decides its volumes changes: placement, phase, deletion
// and, for a deleted pod, its last running container stopping.
func TestPodHandlerEnqueuesWhatChangesDecisions(t *testing.T) {
	deleted := metav1.Now()
	running := []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	stopped := []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}}
	pod := func(node string, phase v1.PodPhase, del *metav1.Time, st []v1.ContainerStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", DeletionTimestamp: del},
			Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase, ContainerStatuses: st}}
	}
	cases := []struct {
		name     string
		old, cur *v1.Pod
		want     []string
	}{
		{"nothing that decides changed", pod("n1", v1.PodRunning, nil, running), pod("n1", v1.PodRunning, nil, running), nil},
		{"scheduled", pod("", v1.PodPending, nil, nil), pod("n1", v1.PodPending, nil, nil), []string{"n1"}},
		{"phase", pod("n1", v1.PodRunning, nil, running), pod("n1", v1.PodSucceeded, nil, stopped), []string{"n1"}},
		{"deleted while running", pod("n1", v1.PodRunning, nil, running), pod("n1", v1.PodRunning, &deleted, running), []string{"n1"}},
		{"deleted pod's last container stopped", pod("n1", v1.PodRunning, &deleted, running), pod("n1", v1.PodRunning, &deleted, stopped), []string{"n1"}},
	}
	for _, tc := range cases {
		for _, form := range []string{"whole", "cached"} {
			t.Run(tc.name+"/"+form, func(t *testing.T) {
				c := &Controller{nodeQueue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
				defer c.nodeQueue.ShutDown()
				old, cur := interface{}(tc.old), interface{}(tc.cur)
				if form == "cached" {
					old, _ = cacheTransform(tc.old.DeepCopy())
					cur, _ = cacheTransform(tc.cur.DeepCopy())
				}
				c.podHandler().OnUpdate(old, cur)
				var got []string
				for c.nodeQueue.Len() > 0 {
					n, _ := c.nodeQueue.Get()
					got = append(got, n)
					c.nodeQueue.Done(n)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("enqueued %v, want %v", got, tc.want)
				}
			})
		}
	}
}
