package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// cutDeleteFinalizer holds a pod after the first write of its grace-0 delete, as a request
// cut between the API server's two writes leaves it. It is the test's own; nothing else
// knows it.
const cutDeleteFinalizer = "chaos.adc.test/cut-delete"

// cutDeleteNS is the namespace of TestChaosPodLeftDeletingIsDetached's pods and claims.
const cutDeleteNS = "cut-delete"

// TestChaosPodLeftDeletingIsDetached is issue 41 item 10 end to end, the CI symptom made
// deterministic: a VolumeAttachment stayed attached with no pod using it, long after the
// last fault, with every invariant holding. The API server deletes a scheduled pod with grace
// period 0 in two etcd writes (set deletionTimestamp, then delete); the churn's burst deadline
// or an API server restart could cut the request between them, leaving the pod deleting with
// no container running. adc and the checker say such a pod wants no volumes (upstream's
// IsPodTerminated), but the simulated kubelet kept its volume in status.volumesInUse, so adc
// rightly never detached it, and logged nothing about it.
//
// Each case attaches a volume to a pod (adc, two replicas, the flaky simulated
// external-attacher and simulated kubelets, as TestChaos runs them), leaves the pod in that
// state (a finalizer of the test's own holds it after the first write of a grace-0 delete),
// and waits for the checker's convergence: no VolumeAttachment without a pod that wants it.
// How long that took is logged, not judged.
func TestChaosPodLeftDeletingIsDetached(t *testing.T) {
	if adcBuildErr != nil {
		t.Fatal(adcBuildErr)
	}
	const seed = 41 // the attacher's failures and the unmount delays; nothing else is random
	cases := []struct {
		name string
		// status is the pod's status while it runs, before the delete; nil: none, as the
		// churn's pods have (no kubelet runs their containers: Pending forever).
		status *v1.PodStatus
		// stopped is its status when the delete is cut; nil: status unchanged.
		stopped *v1.PodStatus
	}{
		{name: "pending pod as the churn makes"},
		{
			name:    "running pod whose container was stopped",
			status:  podStatus(v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}),
			stopped: podStatus(v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}),
		},
	}

	began := time.Now()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), klog.Background().WithName("cut-delete")))
	defer cancel()
	cp := startControlPlane(t)
	checker, feed := startChecker(t, cp, maxWait)
	createVolumes(ctx, t, cp, cutDeleteNS, len(cases))
	kubelets := &simulator.SimulatedKubelets{Client: cp.Client, Seed: seed,
		MigratedPlugins: "kubernetes.io/gce-pd", CSIDrivers: []string{driver, spareDriver, gceDriver}}
	if err := kubelets.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if err := kubelets.AddNode(ctx, fmt.Sprintf("n-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	attacher := flakyAttacher(cp.Client, newAttacherFaults(seed))
	if err := attacher.Run(ctx); err != nil {
		t.Fatal(err)
	}
	reps, stopReps := startLeading(ctx, t, cp.Client, cp.Config)
	defer stopReps()
	t.Logf("set up in %s: %d nodes, %d volumes, adc leading", time.Since(began).Round(time.Millisecond), len(cases), len(cases))

	// converged catches the checker up with etcd and returns what its convergence check finds.
	converged := func(ctx context.Context) ([]Violation, error) {
		if _, err := feed.CatchUp(ctx, 10*time.Second); err != nil {
			return nil, fmt.Errorf("catching the checker up with etcd: %w", err)
		}
		return checker.Convergence(), nil
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, claim, pv := fmt.Sprintf("n-%02d", i), fmt.Sprintf("c-%03d", i), volumePV(i)
			unique := uniqueName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
			vaName := VAName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, node)
			pods := cp.Client.CoreV1().Pods(cutDeleteNS)

			pod := podFor(fmt.Sprintf("p-cut-%d", i), cutDeleteNS, node, claim)
			pod.Finalizers = []string{cutDeleteFinalizer}
			pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating pod: %v", err)
			}
			name := pod.Name
			t.Cleanup(func() {
				// t.Context is done by now: the pod goes with the finalizer.
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := pods.Patch(cctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
					t.Errorf("removing finalizer %s from pod %s: %v", cutDeleteFinalizer, name, err)
				}
			})
			if tc.status != nil {
				if pod, err = setPodStatus(ctx, cp, pod, *tc.status); err != nil {
					t.Fatal(err)
				}
			}

			// The pod's volume is attached, listed and mounted: the state the cut delete hit.
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				problems, err := converged(ctx)
				if err != nil || len(problems) > 0 {
					return false, nil
				}
				n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
				return err == nil && slices.Contains(n.Status.VolumesInUse, v1.UniqueVolumeName(unique)), nil
			}); err != nil {
				describeCutDelete(ctx, t, cp, pod.Name, node, vaName)
				t.Fatalf("setup: %s of pod %s not attached and in use on %s: %v", pv.Name, pod.Name, node, err)
			}

			if tc.stopped != nil {
				if pod, err = setPodStatus(ctx, cp, pod, *tc.stopped); err != nil {
					t.Fatal(err)
				}
			}
			marks := logMarks(reps)
			cut := time.Now()
			if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatalf("deleting pod %s with grace period 0: %v", pod.Name, err)
			}
			t.Logf("%s pod %s deleted with grace period 0 and held by %s: deleting, no container running", cut.Format("15:04:05.000"), pod.Name, cutDeleteFinalizer)

			var problems []Violation // of the last check that ran
			var lastErr error
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				p, err := converged(ctx)
				if lastErr = err; err != nil {
					return false, nil
				}
				problems = p
				return len(problems) == 0, nil
			}); err != nil {
				for _, p := range problems {
					t.Errorf("%s", p)
				}
				describeCutDelete(ctx, t, cp, pod.Name, node, vaName)
				t.Logf("adc log lines about %s, %s or %s since the delete:\n%s", vaName, pv.Name, pod.Name, strings.Join(logLinesSince(reps, marks, vaName, pv.Name, pod.Name, pv.Spec.CSI.VolumeHandle), "\n"))
				explainStuck(t, cp, reps, problems)
				if problems == nil {
					t.Fatalf("convergence not judged within 30 s of the cut delete of pod %s: %v (last error: %v)", pod.Name, err, lastErr)
				}
				t.Fatalf("not converged within 30 s of the cut delete of pod %s (%v): %s stays attached for a pod that wants no volumes",
					pod.Name, err, vaName)
			}
			t.Logf("converged %s after the cut delete: %s detached", time.Since(cut).Round(time.Millisecond), vaName)
			t.Logf("adc log lines about %s since the delete:\n%s", vaName, strings.Join(logLinesSince(reps, marks, vaName), "\n"))

			// It converged because the deleting pod let go of its volume, not because it went.
			switch got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{}); {
			case err != nil:
				t.Errorf("pod %s should still be there, deleting and held by %s: %v", pod.Name, cutDeleteFinalizer, err)
			case got.DeletionTimestamp == nil:
				t.Errorf("pod %s should be deleting, held by %s; it has no deletionTimestamp", pod.Name, cutDeleteFinalizer)
			}
		})
	}

	if err := feed.Err(); err != nil {
		t.Fatalf("the checker missed changes, its verdict is void: %v", err)
	}
	for _, v := range reportViolations(t, checker, feed) {
		t.Errorf("%s", v)
	}
	if dir := os.Getenv("CHAOS_LOG_DIR"); dir != "" {
		reps.SaveLogs(t, dir)
	}
}

// podStatus is the status of a running pod's one container "app" in state.
func podStatus(state v1.ContainerState) *v1.PodStatus {
	return &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", Image: "registry.k8s.io/pause:3.10", State: state}}}
}

// setPodStatus writes status as the pod's kubelet would.
func setPodStatus(ctx context.Context, cp *framework.ControlPlane, pod *v1.Pod, status v1.PodStatus) (*v1.Pod, error) {
	pod = pod.DeepCopy()
	pod.Status = status
	out, err := cp.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting the status of pod %s: %w", pod.Name, err)
	}
	return out, nil
}

// describeCutDelete logs what the API server has of the pod, its node's volume lists and the
// VolumeAttachment: what a run that does not converge is stuck on.
func describeCutDelete(ctx context.Context, t *testing.T, cp *framework.ControlPlane, pod, node, va string) {
	t.Helper()
	if p, err := cp.Client.CoreV1().Pods(cutDeleteNS).Get(ctx, pod, metav1.GetOptions{}); err != nil {
		t.Logf("pod %s: %v", pod, err)
	} else {
		t.Logf("pod %s: phase %s, deletionTimestamp %v, deletionGracePeriodSeconds %v, finalizers %v, container statuses %+v",
			pod, p.Status.Phase, p.DeletionTimestamp, ptr.Deref(p.DeletionGracePeriodSeconds, -1), p.Finalizers, p.Status.ContainerStatuses)
	}
	if n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Logf("node %s: %v", node, err)
	} else {
		t.Logf("node %s: status.volumesInUse %v, status.volumesAttached %v", node, n.Status.VolumesInUse, n.Status.VolumesAttached)
	}
	if a, err := cp.Client.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{}); err != nil {
		t.Logf("VolumeAttachment %s: %v", va, err)
	} else {
		t.Logf("VolumeAttachment %s: node %s, attached %t, deletionTimestamp %v, finalizers %v", va, a.Spec.NodeName, a.Status.Attached, a.DeletionTimestamp, a.Finalizers)
	}
}

// logMarks returns how much each adc process has logged so far, for logLinesSince.
func logMarks(r *replicas) map[*process]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	marks := make(map[*process]int, len(r.procs))
	for _, p := range r.procs {
		marks[p] = len(p.out.String())
	}
	return marks
}

// logLinesSince returns the lines each adc process logged after marks that mention one of
// words, prefixed with the replica.
func logLinesSince(r *replicas, marks map[*process]int, words ...string) []string {
	r.mu.Lock()
	procs := slices.Clone(r.procs)
	r.mu.Unlock()
	var out []string
	for _, p := range procs {
		for _, line := range strings.Split(p.out.String()[marks[p]:], "\n") {
			if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(line, w) }) {
				out = append(out, fmt.Sprintf("[adc %d/%d] %s", p.slot, p.gen, line))
			}
		}
	}
	return out
}
