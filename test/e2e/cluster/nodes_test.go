package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

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
}

// killNode kills the kubelet of node, as a power loss does, and waits until the node
// lifecycle controller marks it not Ready and taints it unreachable.
func killNode(ctx context.Context, t *testing.T, c *modeCluster, node string) lostNode {
	t.Helper()
	l := lostNode{name: node, killed: time.Now()}
	if err := c.stack.Kubelet(node).Kill(); err != nil {
		t.Fatal(err)
	}
	after := func(what, detail string) func(cluster.Event) bool {
		return func(e cluster.Event) bool {
			return e.What == what && e.Name == node && e.At.After(l.killed) && (detail == "" || e.Detail == detail)
		}
	}
	timeout := cluster.DefaultTimings.NodeMonitorGracePeriod + time.Minute
	e, err := c.rec.Wait(ctx, "node "+node+" not Ready", timeout, after(cluster.NodeNotReady, ""))
	if err != nil {
		t.Fatal(err)
	}
	l.notReady = e.At
	l.readyLTT, err = time.Parse(time.RFC3339, e.Detail)
	if err != nil {
		t.Fatalf("node %s: Ready lastTransitionTime %q: %v", node, e.Detail, err)
	}
	e, err = c.rec.Wait(ctx, "node "+node+" tainted unreachable:NoExecute", timeout, after(cluster.NodeTainted, v1.TaintNodeUnreachable+":"+string(v1.TaintEffectNoExecute)))
	if err != nil {
		t.Fatal(err)
	}
	l.tainted = e.At
	figure(t, c.mode, "node loss: kubelet killed -> node not Ready", since(l.killed, l.notReady))
	figure(t, c.mode, "node loss: not Ready -> unreachable:NoExecute taint", since(l.notReady, l.tainted))
	return l
}
