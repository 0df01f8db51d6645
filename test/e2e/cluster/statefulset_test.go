package cluster_test

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// A StatefulSet of three replicas with one claim each: the PV controller binds the claims of
// its volumeClaimTemplate to pre-created PVs, kube-scheduler places the pods, the mode's
// attach/detach controller attaches, the kubelets mount, the pods run. Then the StatefulSet is
// deleted (the garbage collector deletes its pods) and every volume is detached, each only
// after its kubelet unmounted it.
func TestClusterStatefulSet(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		client := c.stack.Client
		start := time.Now()
		a := deployApp(ctx, t, c, "sts-"+string(c.mode), appSpec{group: "sts", replicas: 3})
		figure(t, c.mode, "statefulset: created -> 3 pods Running", since(start, time.Now()))

		var startup []time.Duration
		for i := range a.replicas {
			pod := a.current(ctx, t, c, a.pod(i))
			// Placed by kube-scheduler: the test never set spec.nodeName.
			if !slices.Contains(groupNodes("sts"), pod.Spec.NodeName) || !condition(pod, v1.PodScheduled) {
				t.Errorf("pod %s on %q, PodScheduled %v: not placed by the scheduler on a node of its group", pod.Name, pod.Spec.NodeName, condition(pod, v1.PodScheduled))
			}
			// Bound by the PV controller.
			pvc, err := client.CoreV1().PersistentVolumeClaims(a.ns).Get(ctx, cluster.ClaimName(a.name, i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || !slices.Contains(a.pvs, pvc.Spec.VolumeName) {
				t.Errorf("claim %s: volume %q, annotations %v: not bound by the PV controller to a PV of its class", pvc.Name, pvc.Spec.VolumeName, pvc.Annotations)
			}
			pv := pvc.Spec.VolumeName
			va := harness.VAName(a.handles[pv], a.driver, pod.Spec.NodeName)
			if _, ok := c.rec.First(cluster.Is(cluster.VAAttached, "", va)); !ok {
				t.Errorf("VolumeAttachment %s of PV %s on node %s never seen attached", va, pv, pod.Spec.NodeName)
			}
			checkMounted(t, c, a.driver, a.handles[pv], pod.Spec.NodeName)
			created, _ := c.rec.First(cluster.Is(cluster.PodCreated, a.ns, pod.Name))
			running, _ := c.rec.First(cluster.Is(cluster.PodRunning, a.ns, pod.Name))
			startup = append(startup, running.At.Sub(created.At))
		}
		slices.Sort(startup)
		figure(t, c.mode, "statefulset: pod created -> Running (slowest of 3)", startup[len(startup)-1].Round(10*time.Millisecond).String())

		// Delete the StatefulSet: the garbage collector deletes the pods, the kubelets unmount,
		// the attach/detach controller detaches.
		deleted := time.Now()
		if err := client.AppsV1().StatefulSets(a.ns).Delete(ctx, a.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var last time.Time
		for _, pv := range a.pvs {
			call := waitUnpublished(ctx, t, c, a.driver, a.handles[pv], deleted, podTimeout)
			if call.Time.After(last) {
				last = call.Time
			}
		}
		figure(t, c.mode, "statefulset: deleted -> 3 volumes detached", since(deleted, last))
		checkDetachOrder(t, c, a)
	})
}

// checkMounted fails unless the driver's log shows ControllerPublishVolume of handle and then
// NodeStageVolume and NodePublishVolume by node's kubelet.
func checkMounted(t *testing.T, c *modeCluster, driver, handle, node string) {
	t.Helper()
	calls, err := c.stack.Driver(driver).CallsFor(handle)
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, call := range calls {
		if call.Code != "OK" {
			continue
		}
		switch {
		case call.Method == "ControllerPublishVolume" && len(seq) == 0,
			call.Method == "NodeStageVolume" && len(seq) == 1 && call.Node == node,
			call.Method == "NodePublishVolume" && len(seq) == 2 && call.Node == node:
			seq = append(seq, call.Method)
		}
	}
	if len(seq) != 3 {
		t.Errorf("volume %s on %s: driver calls %v, want ControllerPublish, then NodeStage and NodePublish by the kubelet of %s", handle, node, methods(calls), node)
	}
}

// checkDetachOrder fails on any detach of the app's volumes that started while a kubelet
// still had the volume staged or published.
func checkDetachOrder(t *testing.T, c *modeCluster, a *app) {
	t.Helper()
	for _, pv := range a.pvs {
		calls, err := c.stack.Driver(a.driver).CallsFor(a.handles[pv])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range harness.DetachOrderViolations(calls) {
			t.Errorf("detached before unmounted: %s", v)
		}
	}
}

func methods(calls []harness.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method+"("+c.Node+","+c.Code+")")
	}
	return out
}

func condition(p *v1.Pod, typ v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
