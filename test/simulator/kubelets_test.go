package simulator

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

const testDriver = "chaos.csi.example.com"

// TestDeletingPodWithoutRunningContainersIsUnmounted is issue 41 item 10, the harness side.
// The API server deletes a scheduled pod with grace period 0 in two etcd writes (set
// deletionTimestamp, then delete); a request cut between them (a client deadline, an API
// server restart) leaves the pod in etcd, deleting. With no container running it wants no
// volumes (upstream's IsPodTerminated rule, which adc and the chaos checker apply), so a
// kubelet unmounts them, drops them from status.volumesInUse and then finishes the delete.
// The simulated kubelet kept such a pod's volume in volumesInUse forever, and adc rightly
// never detached it. A deleting pod with a container still running keeps its volume.
func TestDeletingPodWithoutRunningContainersIsUnmounted(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	// One unmount delay for every volume: two volumes released in the same pass leave
	// volumesInUse in the same pass.
	k := &SimulatedKubelets{Client: client, Sync: 10 * time.Millisecond, UnmountMin: 20 * time.Millisecond, UnmountMax: 20 * time.Millisecond}
	if err := k.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.AddNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	stopped := newTestPod(ctx, t, client, "p-stopped", "c-stopped", "h-stopped", nil)
	running := newTestPod(ctx, t, client, "p-running", "c-running", "h-running",
		[]v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}})
	stoppedVol, runningVol := CSIUniqueName(testDriver, "h-stopped"), CSIUniqueName(testDriver, "h-running")

	// adc attaches both volumes; the kubelet mounts them.
	patch := `{"status":{"volumesAttached":[{"name":"` + stoppedVol + `","devicePath":""},{"name":"` + runningVol + `","devicePath":""}]}}`
	if _, err := client.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	inUse := func() []string {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, v := range n.Status.VolumesInUse {
			out = append(out, string(v))
		}
		slices.Sort(out)
		return out
	}
	want := []string{runningVol, stoppedVol}
	slices.Sort(want)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(inUse(), want), nil
	}); err != nil {
		t.Fatalf("setup: the simulated kubelet never mounted both volumes: volumesInUse %v", inUse())
	}

	// The first half of a grace-0 delete of both pods, the running one first: the kubelet's
	// pod informer delivers them in this order, so once it acts on the stopped pod it has
	// seen the running one deleting too.
	for _, pod := range []*v1.Pod{running, stopped} {
		now := metav1.Now()
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, new(int64)
		if _, err := client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !slices.Contains(inUse(), stoppedVol), nil
	}); err != nil {
		t.Fatalf("the simulated kubelet keeps %s in status.volumesInUse for pod %s, deleted with no container running "+
			"(volumesInUse %v): upstream's rule (and the chaos checker's wantsVolumes) says it wants no volumes, so adc may never detach it",
			stoppedVol, stopped.Name, inUse())
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(stopped.Namespace).Get(ctx, stopped.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the simulated kubelet unmounted the volumes of pod %s, deleting, and did not finish its delete", stopped.Name)
	}

	// Same unmount delay, same informer pass or an earlier one: had the kubelet released the
	// running pod's volume, it would be gone by now.
	if !slices.Contains(inUse(), runningVol) {
		t.Errorf("the simulated kubelet unmounted %s of pod %s, deleting with a container still running (volumesInUse %v)", runningVol, running.Name, inUse())
	}
	if _, err := client.CoreV1().Pods(running.Namespace).Get(ctx, running.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("pod %s, deleting with a container still running: %v; want it kept until its containers stop", running.Name, err)
	}
}

// newTestPod binds a new claim to a CSI PersistentVolume of handle and creates pod, scheduled
// to n1, using it, with the given container statuses (none: Pending).
func newTestPod(ctx context.Context, t *testing.T, client *fake.Clientset, name, claim, handle string, statuses []v1.ContainerStatus) *v1.Pod {
	t.Helper()
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}}}}
	if _, err := BindNewClaim(ctx, client, "ns", claim, pv); err != nil {
		t.Fatal(err)
	}
	phase := v1.PodRunning
	if len(statuses) == 0 {
		phase = v1.PodPending // as the chaos pods: no kubelet runs their containers
	}
	pod, err := client.CoreV1().Pods("ns").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "app", Image: "pause"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
		Status: v1.PodStatus{Phase: phase, ContainerStatuses: statuses},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
