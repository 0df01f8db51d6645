package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/migration-aware/adc/test/e2e/cluster"
)

// outOfServiceTaint is what an operator puts on a node that is shut down for good (KEP-2268).
var outOfServiceTaint = v1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}

// taintNode adds taint to node, as `kubectl taint` does.
func taintNode(ctx context.Context, c *modeCluster, node string, taint v1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.stack.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		_, err = c.stack.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// cordon marks node unschedulable, as `kubectl cordon` (and the first step of a drain) does.
func cordon(ctx context.Context, c *modeCluster, node string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.stack.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = true
		_, err = c.stack.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// evict evicts pod through the eviction API, as `kubectl drain` does.
func evict(ctx context.Context, c *modeCluster, ns, pod string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}}
	if err := c.stack.Client.PolicyV1().Evictions(ns).Evict(ctx, ev); err != nil {
		return fmt.Errorf("evicting pod %s/%s: %w", ns, pod, err)
	}
	return nil
}

// lostNode is a node whose kubelet the test killed, as the node lifecycle controller saw it.
type lostNode struct {
	name string
	// killed is when the kubelet was killed; notReady when the watch saw the Ready condition
	// leave True; readyLTT the condition's lastTransitionTime (whole seconds, the clock adc's
	// max-wait-for-unmount counts from); tainted when the unreachable NoExecute taint came.
	killed, notReady, readyLTT, tainted time.Time
	// shutdownTainted is when the cloud node lifecycle controller's shutdown taint came (zero
	// unless the machine was shut down: shutDownMachine).
	shutdownTainted time.Time
}

// shutdownTaint is what the cloud node lifecycle controller puts on a NotReady node whose
// machine the cloud reports shut down (k8s.io/cloud-provider nodelifecycle.ShutdownTaint).
var shutdownTaint = v1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: v1.TaintEffectNoSchedule}

// cloudGrace is how long partitionNode watches a partitioned node not get the shutdown taint:
// ten of the cloud node lifecycle controller's monitor periods, 1 s each, by when it has looked
// at the NotReady node ten times (a shut-down node gets its taint within a few on an idle
// machine).
var cloudGrace = 10 * cluster.DefaultTimings.NodeMonitorPeriod

// cloudTaintTimeout is how long a test waits for the cloud node lifecycle controller to put
// the shutdown taint on, or take it off: a deadline for a loaded machine (a busy two-core one
// was seen taking 10 s), not a budget; the delays are reported as figures.
const cloudTaintTimeout = time.Minute

// nodeEventAfter matches the recorder's events of kind what about node after since (with
// detail when it is not empty).
func nodeEventAfter(node, what, detail string, since time.Time) func(cluster.Event) bool {
	return func(e cluster.Event) bool {
		return e.What == what && e.Name == node && e.At.After(since) && (detail == "" || e.Detail == detail)
	}
}

// taintDetail is how the recorder's NodeTainted events spell taint.
func taintDetail(taint v1.Taint) string { return taint.Key + ":" + string(taint.Effect) }

// unreachableTaintTimeout bounds the wait for the node lifecycle controller's NoExecute taint
// after a node went not Ready. It usually comes within seconds, but through a rate limiter
// per zone (one node per 10 s) behind the other scenarios' lost nodes, and not at all while
// the zone looks disrupted: on a machine loaded enough that the kubelets miss their Lease
// renewals, the zone has to recover first (a loaded fresh clone waited more than 58 s).
const unreachableTaintTimeout = 3 * time.Minute

// loseKubelet runs lose (which kills node's kubelet one way or another) and waits until the
// node lifecycle controller marks the node not Ready and taints it unreachable.
func loseKubelet(ctx context.Context, t *testing.T, c *modeCluster, node string, lose func(string) error) lostNode {
	t.Helper()
	l := lostNode{name: node, killed: time.Now()}
	if err := lose(node); err != nil {
		t.Fatal(err)
	}
	timeout := cluster.DefaultTimings.NodeMonitorGracePeriod + time.Minute
	e, err := c.rec.Wait(ctx, "node "+node+" not Ready", timeout, nodeEventAfter(node, cluster.NodeNotReady, "", l.killed))
	if err != nil {
		t.Fatalf("%v\n%s", err, describeNodes(ctx, c))
	}
	l.notReady = e.At
	l.readyLTT, err = time.Parse(time.RFC3339, e.Detail)
	if err != nil {
		t.Fatalf("node %s: Ready lastTransitionTime %q: %v", node, e.Detail, err)
	}
	unreachable := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	e, err = c.rec.Wait(ctx, "node "+node+" tainted unreachable:NoExecute", unreachableTaintTimeout, nodeEventAfter(node, cluster.NodeTainted, taintDetail(unreachable), l.killed))
	if err != nil {
		t.Fatalf("%v\n%s", err, describeNodes(ctx, c))
	}
	l.tainted = e.At
	return l
}

// describeNodes says, per zone, which nodes are Ready and how each is tainted, and lists the
// node Events: what the node lifecycle controller decides from. It taints lost nodes NoExecute
// through a rate limiter per zone and stops when a zone looks disrupted (more than two nodes
// and at least --unhealthy-zone-threshold, 55 %, not Ready), so a taint that does not come is
// explained by the other nodes of its zone.
func describeNodes(ctx context.Context, c *modeCluster) string {
	nodes, err := c.stack.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing nodes: " + err.Error()
	}
	byZone := map[string][]string{}
	notReady := map[string]int{}
	for _, n := range nodes.Items {
		zone := n.Labels[v1.LabelTopologyZone]
		ready := "Ready=?"
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				ready = fmt.Sprintf("Ready=%s since %s", cond.Status, cond.LastTransitionTime.Format(time.StampMilli))
				if cond.Status != v1.ConditionTrue {
					notReady[zone]++
				}
			}
		}
		var taints []string
		for _, tn := range n.Spec.Taints {
			taints = append(taints, taintDetail(tn))
		}
		byZone[zone] = append(byZone[zone], fmt.Sprintf("%s %s taints %v", n.Name, ready, taints))
	}
	out := "nodes by zone:"
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		lines := byZone[zone]
		out += fmt.Sprintf("\n  zone %q: %d of %d not Ready", zone, notReady[zone], len(lines))
		for _, l := range lines {
			out += "\n    " + l
		}
	}
	events, err := c.stack.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node"})
	if err == nil {
		out += "\nnode events:"
		for _, e := range events.Items {
			out += fmt.Sprintf("\n  %s %s %s: %s (x%d, last %s)", e.InvolvedObject.Name, e.Type, e.Reason, e.Message, e.Count, e.LastTimestamp.Format(time.StampMilli))
		}
	}
	return out
}

// killNode kills the kubelet of node, as a power loss the cloud does not report does (its
// machine stays "running": no shutdown taint comes), and waits until the node lifecycle
// controller marks it not Ready and taints it unreachable.
func killNode(ctx context.Context, t *testing.T, c *modeCluster, node string) lostNode {
	t.Helper()
	l := loseKubelet(ctx, t, c, node, func(node string) error { return c.stack.Kubelet(node).Kill() })
	figure(t, c.mode, "node loss: kubelet killed -> node not Ready", since(l.killed, l.notReady))
	figure(t, c.mode, "node loss: not Ready -> unreachable:NoExecute taint", since(l.notReady, l.tainted))
	return l
}

// shutDownMachine shuts node's machine down (its kubelet killed, the test cloud reporting the
// machine shut down: cluster.ShutDownMachine) and waits until the node lifecycle controller
// marks the node not Ready and taints it unreachable, and the cloud node lifecycle controller
// taints it node.cloudprovider.kubernetes.io/shutdown:NoSchedule (lostNode.shutdownTainted).
func shutDownMachine(ctx context.Context, t *testing.T, c *modeCluster, node string) lostNode {
	t.Helper()
	l := loseKubelet(ctx, t, c, node, c.stack.ShutDownMachine)
	timeout := cluster.DefaultTimings.NodeMonitorGracePeriod + cloudTaintTimeout
	e, err := c.rec.Wait(ctx, "node "+node+" tainted "+taintDetail(shutdownTaint), timeout, nodeEventAfter(node, cluster.NodeTainted, taintDetail(shutdownTaint), l.killed))
	if err != nil {
		t.Fatal(err)
	}
	l.shutdownTainted = e.At
	figure(t, c.mode, "cloud: machine shut down -> node not Ready", since(l.killed, l.notReady))
	figure(t, c.mode, "cloud: not Ready -> shutdown:NoSchedule taint", since(l.notReady, l.shutdownTainted))
	return l
}

// partitionNode kills node's kubelet while its machine keeps running as far as the cloud
// knows (cluster.PartitionNode), waits until the node is not Ready and tainted unreachable,
// then watches it for cloudGrace more: the cloud node lifecycle controller, which by then
// has looked at the NotReady node ten times, must never taint it shut down.
func partitionNode(ctx context.Context, t *testing.T, c *modeCluster, node string) lostNode {
	t.Helper()
	l := loseKubelet(ctx, t, c, node, c.stack.PartitionNode)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Until(l.notReady.Add(cloudGrace)), true, func(context.Context) (bool, error) {
		return false, noShutdownTaint(c, node, l.killed)
	})
	if !wait.Interrupted(err) {
		t.Fatalf("partitioned node %s: %v", node, err)
	}
	figure(t, c.mode, "cloud: partition -> node not Ready", since(l.killed, l.notReady))
	return l
}

// noShutdownTaint returns an error if the recorder saw node tainted shut down after since.
func noShutdownTaint(c *modeCluster, node string, since time.Time) error {
	if e, ok := c.rec.First(nodeEventAfter(node, cluster.NodeTainted, taintDetail(shutdownTaint), since)); ok {
		return fmt.Errorf("node %s tainted %s at %s, its machine running", node, taintDetail(shutdownTaint), e.At.Format(time.StampMilli))
	}
	return nil
}

// startMachine brings node's machine back (the test cloud reports it running, its kubelet
// starts again: cluster.StartMachine), waits until the kubelet registered again (Ready with a
// fresh heartbeat, every driver in its CSINode) and the cloud node lifecycle controller took
// the shutdown taint off, and returns when the taint was seen gone.
func startMachine(ctx context.Context, t *testing.T, c *modeCluster, node string) time.Time {
	t.Helper()
	started := time.Now()
	if err := c.stack.StartMachine(node); err != nil {
		t.Fatal(err)
	}
	if err := c.stack.Kubelet(node).WaitRegistered(ctx, started, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	figure(t, c.mode, "cloud: machine started -> kubelet registered", since(started, time.Now()))
	var untainted time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cloudTaintTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.stack.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("getting node %s: %w", node, err)
		}
		for _, taint := range n.Spec.Taints {
			if taint.MatchTaint(&shutdownTaint) {
				return false, nil
			}
		}
		untainted = time.Now()
		return true, nil
	})
	if err != nil {
		t.Fatalf("node %s Ready again: shutdown taint not taken off within %s: %v", node, cloudTaintTimeout, err)
	}
	figure(t, c.mode, "cloud: machine started -> shutdown taint gone", since(started, untainted))
	return untainted
}

// deleteMachine deletes node's machine (its kubelet killed, the test cloud no longer knowing
// it: cluster.DeleteMachine) and waits until the cloud node lifecycle controller deleted the
// Node, once the node lifecycle controller had marked it not Ready; it returns when the
// deletion was seen.
func deleteMachine(ctx context.Context, t *testing.T, c *modeCluster, node string) time.Time {
	t.Helper()
	deleted := time.Now()
	if err := c.stack.DeleteMachine(node); err != nil {
		t.Fatal(err)
	}
	timeout := cluster.DefaultTimings.NodeMonitorGracePeriod + time.Minute
	e, err := c.rec.Wait(ctx, "node "+node+" deleted", timeout, nodeEventAfter(node, cluster.NodeDeleted, "", deleted))
	if err != nil {
		t.Fatal(err)
	}
	return e.At
}
