package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// podTimeout bounds a wait for pods placed, attached and mounted: a failure bound only.
const podTimeout = 2 * time.Minute

// app is a StatefulSet of a scenario, one claim per replica, on pre-created PVs of a
// StorageClass of its own (so the PV controller binds them to no other scenario's claims).
type app struct {
	ns, name string
	replicas int
	driver   string
	// pvs are the PV names; handles the CSI volume handles the driver sees, by PV.
	pvs     []string
	handles map[string]string
}

// appSpec says what deployApp creates.
type appSpec struct {
	group    string
	replicas int
	// gceZone, when set, makes the PVs in-tree gce-pd disks labelled with that zone.
	gceZone string
}

// deployApp creates the namespace, the StorageClass and the PVs, then the StatefulSet, and
// waits until every pod is Running. Nothing is bound, placed or attached by the test.
func deployApp(ctx context.Context, t *testing.T, c *modeCluster, ns string, spec appSpec) *app {
	t.Helper()
	client := c.stack.Client
	a := &app{ns: ns, name: "app", replicas: spec.replicas, driver: harness.DefaultDriver, handles: map[string]string{}}
	if err := cluster.CreateNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CreateStorageClass(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	for i := range spec.replicas {
		pv := cluster.PV{Name: fmt.Sprintf("%s-pv-%d", ns, i), Class: ns}
		if spec.gceZone != "" {
			disk := fmt.Sprintf("%s-disk-%d", ns, i)
			pv.GCEPD, pv.Zone = disk, spec.gceZone
			a.driver = harness.GCEPDDriver
			// csi-translation-lib's handle for a zonal disk.
			a.handles[pv.Name] = "projects/UNSPECIFIED/zones/" + spec.gceZone + "/disks/" + disk
		} else {
			pv.Driver, pv.Handle = harness.DefaultDriver, fmt.Sprintf("%s-vol-%d", ns, i)
			a.handles[pv.Name] = pv.Handle
		}
		if _, err := cluster.CreatePV(ctx, client, pv); err != nil {
			t.Fatal(err)
		}
		a.pvs = append(a.pvs, pv.Name)
	}
	if _, err := cluster.CreateStatefulSet(ctx, client, ns, cluster.StatefulSet{Name: a.name, Replicas: int32(spec.replicas), Class: ns, Group: spec.group}); err != nil {
		t.Fatal(err)
	}
	for i := range spec.replicas {
		if _, err := c.rec.Wait(ctx, "pod "+a.pod(i)+" Running", podTimeout, cluster.Is(cluster.PodRunning, ns, a.pod(i))); err != nil {
			t.Fatalf("%v\n%s", err, describePods(ctx, c, ns))
		}
	}
	return a
}

func (a *app) pod(i int) string { return cluster.PodName(a.name, i) }

// current returns the pod named name as the API has it now.
func (a *app) current(ctx context.Context, t *testing.T, c *modeCluster, name string) *v1.Pod {
	t.Helper()
	p, err := c.stack.Client.CoreV1().Pods(a.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod %s/%s: %v", a.ns, name, err)
	}
	return p
}

// pvOf returns the PV the claim of pod ordinal i is bound to.
func (a *app) pvOf(ctx context.Context, t *testing.T, c *modeCluster, i int) string {
	t.Helper()
	pvc, err := c.stack.Client.CoreV1().PersistentVolumeClaims(a.ns).Get(ctx, cluster.ClaimName(a.name, i), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading claim of pod %s: %v", a.pod(i), err)
	}
	if pvc.Spec.VolumeName == "" {
		t.Fatalf("claim %s/%s is not bound", a.ns, pvc.Name)
	}
	return pvc.Spec.VolumeName
}

// podsOn returns the ordinals of the app's pods on node, and their UIDs.
func (a *app) podsOn(ctx context.Context, t *testing.T, c *modeCluster, node string) ([]int, map[int]types.UID) {
	t.Helper()
	var ords []int
	uids := map[int]types.UID{}
	for i := range a.replicas {
		p := a.current(ctx, t, c, a.pod(i))
		if p.Spec.NodeName == node {
			ords = append(ords, i)
			uids[i] = p.UID
		}
	}
	return ords, uids
}

// waitReplaced waits until pod ordinal i runs again under a new UID (the StatefulSet
// controller re-created it) and returns that Running event.
func (a *app) waitReplaced(ctx context.Context, t *testing.T, c *modeCluster, i int, old types.UID, timeout time.Duration) cluster.Event {
	t.Helper()
	e, err := c.rec.Wait(ctx, "pod "+a.pod(i)+" re-created and Running", timeout, func(e cluster.Event) bool {
		return e.What == cluster.PodRunning && e.Namespace == a.ns && e.Name == a.pod(i) && e.UID != old
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, c, a.ns))
	}
	return e
}

// unpublishes returns the driver's ControllerUnpublishVolume calls for handle that started
// after since.
func unpublishes(t *testing.T, c *modeCluster, driver, handle string, since time.Time) []harness.Call {
	t.Helper()
	calls, err := c.stack.Driver(driver).CallsFor(handle, "ControllerUnpublishVolume")
	if err != nil {
		t.Fatal(err)
	}
	var out []harness.Call
	for _, call := range calls {
		if !call.Start.Before(since) {
			out = append(out, call)
		}
	}
	return out
}

// waitUnpublished waits for the first successful ControllerUnpublishVolume of handle after
// since, as the driver logged it.
func waitUnpublished(ctx context.Context, t *testing.T, c *modeCluster, driver, handle string, since time.Time, timeout time.Duration) harness.Call {
	t.Helper()
	var found harness.Call
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, call := range unpublishes(t, c, driver, handle, since) {
			if call.Code == "OK" {
				found = call
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no ControllerUnpublishVolume of %s within %s: %v\n%s", handle, timeout, err, describePods(ctx, c, ""))
	}
	return found
}

// describePods lists the pods of ns (all when empty) with phase, node and deletion, for a
// failure message.
func describePods(ctx context.Context, c *modeCluster, ns string) string {
	pods, err := c.stack.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	out := "pods:"
	for _, p := range pods.Items {
		del := ""
		if p.DeletionTimestamp != nil {
			del = " terminating"
		}
		cond := ""
		for _, c := range p.Status.Conditions {
			if c.Status != v1.ConditionTrue && c.Message != "" {
				cond += fmt.Sprintf(" [%s: %s]", c.Type, c.Message)
			}
		}
		out += fmt.Sprintf("\n  %s/%s %s on %q%s%s", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName, del, cond)
	}
	events, err := c.stack.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		out += "\nwarning events:"
		for _, e := range events.Items {
			if e.Type == v1.EventTypeWarning {
				at := e.LastTimestamp.Time
				if at.IsZero() {
					at = e.EventTime.Time // events.k8s.io recorders (the scheduler) set only this
				}
				out += fmt.Sprintf("\n  %s %s/%s %s: %s", at.Format("15:04:05"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	return out
}

// gone says whether err is the API's NotFound.
func gone(err error) bool { return apierrors.IsNotFound(err) }

// since formats the time from a to b for a figure.
func since(a, b time.Time) string { return b.Sub(a).Round(10 * time.Millisecond).String() }
