package cluster_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// lostPod is a StatefulSet pod on a node the test killed, and its volume.
type lostPod struct {
	ordinal int
	uid     types.UID
	pv      string
	handle  string
	// va is the VolumeAttachment on the lost node.
	va string
}

// loseNode deploys the app on group's two nodes, kills the kubelet of the node of its first
// pod, and waits until the node lifecycle controller marked the node not Ready and the taint
// eviction controller deleted its pods (the unreachable toleration ran out): they stick in
// Terminating, no kubelet left to confirm. Nothing is detached by then.
func loseNode(ctx context.Context, t *testing.T, c *modeCluster, ns, group string) (*app, lostNode, []lostPod) {
	t.Helper()
	a := deployApp(ctx, t, c, ns, appSpec{group: group, replicas: 2})
	victim := a.current(ctx, t, c, a.pod(0)).Spec.NodeName
	ords, uids := a.podsOn(ctx, t, c, victim)
	var lost []lostPod
	for _, i := range ords {
		pv := a.pvOf(ctx, t, c, i)
		lost = append(lost, lostPod{ordinal: i, uid: uids[i], pv: pv, handle: a.handles[pv], va: harness.VAName(a.handles[pv], a.driver, victim)})
	}
	node := killNode(ctx, t, c, victim)
	for _, p := range lost {
		e, err := c.rec.Wait(ctx, "pod "+a.pod(p.ordinal)+" Terminating", time.Minute, func(e cluster.Event) bool {
			return e.What == cluster.PodTerminating && e.UID == p.uid
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, describePods(ctx, c, ns))
		}
		figure(t, c.mode, "node loss: taint -> pod Terminating (toleration 5 s)", since(node.tainted, e.At))
		if calls := unpublishes(t, c, a.driver, p.handle, node.killed); len(calls) > 0 {
			t.Errorf("volume %s detached before anyone said the node was gone: %v", p.handle, methods(calls))
		}
	}
	return a, node, lost
}

// Non-graceful node shutdown, the KEP-2268 flow: a kubelet that runs a StatefulSet pod is
// killed; the node lifecycle controller marks its node not Ready and taints it; the pod
// sticks in Terminating; the operator adds node.kubernetes.io/out-of-service; pod GC
// force-deletes the pod; the volume is detached (forced by that taint, the stopped kubelet
// still reporting it in use); the StatefulSet controller re-creates the pod, the scheduler
// places it on the other node, it attaches and runs.
func TestClusterNodeShutdown(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		a, node, lost := loseNode(ctx, t, c, "down-"+string(c.mode), "down")

		before, err := c.stack.Client.CoreV1().Nodes().Get(ctx, node.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tainted := time.Now()
		if err := taintNode(ctx, c, node.name, outOfServiceTaint); err != nil {
			t.Fatal(err)
		}
		for _, p := range lost {
			if !inUse(before, a.driver, p.handle) {
				t.Logf("volume %s was not in the lost node's volumesInUse when it was tainted", p.handle)
			}
			podGone, err := c.rec.Wait(ctx, "pod "+a.pod(p.ordinal)+" force-deleted by pod GC", time.Minute, func(e cluster.Event) bool {
				return e.What == cluster.PodDeleted && e.UID == p.uid
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, describePods(ctx, c, a.ns))
			}
			detach := waitUnpublished(ctx, t, c, a.driver, p.handle, node.killed, time.Minute)
			// Never detached while the lost kubelet reported it in use, unless forced by the taint.
			for _, call := range unpublishes(t, c, a.driver, p.handle, node.killed) {
				if call.Start.Before(tainted) {
					t.Errorf("ControllerUnpublishVolume of %s at %s, before the out-of-service taint (%s)", p.handle, call.Start.Format(time.StampMilli), tainted.Format(time.StampMilli))
				}
			}
			running := a.waitReplaced(ctx, t, c, p.ordinal, p.uid, podTimeout)
			if running.Node == node.name {
				t.Errorf("pod %s re-created on the lost node %s", a.pod(p.ordinal), node.name)
			}
			checkMoved(t, c, p, running.Node, a.driver)
			figure(t, c.mode, "shutdown+taint: taint -> pod force-deleted (pod GC)", since(tainted, podGone.At))
			figure(t, c.mode, "shutdown+taint: taint -> detached (ControllerUnpublish)", since(tainted, detach.Time))
			figure(t, c.mode, "shutdown+taint: taint -> re-created pod Running", since(tainted, running.At))
		}
	})
}

// StockFullWaitEnv, set to 1, makes the stock mode's scenario without the taint wait out the
// stock attach/detach controller's six minutes (a constant, no flag), as `make test-cluster`
// does. Unset (make test), the stock mode checks that nothing is detached for longer than
// adc's shortened wait, then ends the outage with the out-of-service taint, so that make test
// stays within its time budget.
const StockFullWaitEnv = "CLUSTER_STOCK_FULL_WAIT"

// The same without the taint, before KEP-2268: the operator force-deletes the Terminating pod
// (`kubectl delete pod --force`); the StatefulSet controller re-creates it on the other node,
// where it waits: its volume is still attached to the lost node, whose kubelet last reported
// it in use, and nothing detaches it before the mode's max-wait-for-unmount (adc: 30 s after
// the node left Ready; the stock controller: 6 minutes after the pod left, no flag).
func TestClusterNodeShutdownWithoutTaint(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		a, node, lost := loseNode(ctx, t, c, "wait-"+string(c.mode), "wait")
		maxWait := cluster.DefaultTimings.ForceDetachAfter(c.mode)
		forced := time.Now()
		zero := int64(0)
		for _, p := range lost {
			err := c.stack.Client.CoreV1().Pods(a.ns).Delete(ctx, a.pod(p.ordinal), metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.uid}})
			if err != nil && !gone(err) {
				t.Fatal(err)
			}
		}
		if c.mode == cluster.Stock && os.Getenv(StockFullWaitEnv) != "1" {
			stockHoldsThenTaint(ctx, t, c, a, node, lost, forced, "shutdown, no taint: force-delete -> detached", cluster.DefaultTimings.MaxWaitForUnmount+15*time.Second)
			return
		}
		for _, p := range lost {
			detach := waitUnpublished(ctx, t, c, a.driver, p.handle, node.killed, maxWait+2*time.Minute)
			// The earliest the mode may detach a volume still reported in use: adc counts from
			// the Ready condition's transition, the stock controller from when it first wanted
			// to detach, after the force-delete.
			deadline := node.readyLTT.Add(maxWait)
			if c.mode == cluster.Stock {
				deadline = forced.Add(maxWait)
			}
			for _, call := range unpublishes(t, c, a.driver, p.handle, node.killed) {
				if call.Start.Before(deadline) {
					t.Errorf("ControllerUnpublishVolume of %s at %s, before max-wait-for-unmount ran out (%s)", p.handle, call.Start.Format(time.StampMilli), deadline.Format(time.StampMilli))
				}
			}
			running := a.waitReplaced(ctx, t, c, p.ordinal, p.uid, podTimeout)
			checkMoved(t, c, p, running.Node, a.driver)
			figure(t, c.mode, "shutdown, no taint: node not Ready -> detached", since(node.notReady, detach.Time))
			figure(t, c.mode, "shutdown, no taint: force-delete -> detached", since(forced, detach.Time))
			figure(t, c.mode, "shutdown, no taint: force-delete -> re-created pod Running", since(forced, running.At))
		}
	})
}

// stockHoldsThenTaint is the stock mode's scenario without the taint in make test: nothing is
// detached for window after the force-delete (longer than adc's max-wait-for-unmount; the
// stock controller's own six minutes are for make test-cluster), recorded as figure what,
// then the operator adds the out-of-service taint and the volume moves.
func stockHoldsThenTaint(ctx context.Context, t *testing.T, c *modeCluster, a *app, node lostNode, lost []lostPod, forced time.Time, what string, window time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Until(forced.Add(window)), true, func(context.Context) (bool, error) {
		for _, p := range lost {
			if calls := unpublishes(t, c, a.driver, p.handle, node.killed); len(calls) > 0 {
				return false, fmt.Errorf("volume %s detached %s after the force-delete, before max-wait-for-unmount: %v",
					p.handle, calls[0].Start.Sub(forced).Round(time.Millisecond), methods(calls))
			}
		}
		return false, nil
	})
	if !wait.Interrupted(err) {
		t.Fatalf("stock attach/detach controller: %v", err)
	}
	figure(t, c.mode, what, fmt.Sprintf("> %s (%s=1: 6 min)", window.Round(time.Second), StockFullWaitEnv))
	tainted := time.Now()
	if err := taintNode(ctx, c, node.name, outOfServiceTaint); err != nil {
		t.Fatal(err)
	}
	for _, p := range lost {
		detach := waitUnpublished(ctx, t, c, a.driver, p.handle, node.killed, time.Minute)
		running := a.waitReplaced(ctx, t, c, p.ordinal, p.uid, podTimeout)
		checkMoved(t, c, p, running.Node, a.driver)
		t.Logf("then tainted out-of-service: detached %s and re-created pod Running %s after the taint",
			since(tainted, detach.Time), since(tainted, running.At))
	}
}

// checkMoved fails unless the volume's VolumeAttachment on its new node was created only after
// the one on the old node was gone: detached from the old node before attached to the new.
func checkMoved(t *testing.T, c *modeCluster, p lostPod, newNode, driver string) {
	t.Helper()
	newVA := harness.VAName(p.handle, driver, newNode)
	oldGone, ok := c.rec.First(cluster.Is(cluster.VADeleted, "", p.va))
	if !ok {
		t.Errorf("VolumeAttachment %s on the old node never seen deleted", p.va)
		return
	}
	created, ok := c.rec.First(cluster.Is(cluster.VACreated, "", newVA))
	if !ok {
		t.Errorf("VolumeAttachment %s on the new node %s never seen", newVA, newNode)
		return
	}
	if created.At.Before(oldGone.At) {
		t.Errorf("volume %s: VolumeAttachment on %s created at %s, before the one on the old node was gone (%s)", p.handle, newNode, created.At.Format(time.StampMilli), oldGone.At.Format(time.StampMilli))
	}
}

// inUse says whether node's status.volumesInUse lists the CSI volume.
func inUse(n *v1.Node, driver, handle string) bool {
	return slices.Contains(n.Status.VolumesInUse, v1.UniqueVolumeName(harness.UniqueName(driver, handle)))
}
