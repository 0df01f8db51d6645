package cluster_test

import (
	"testing"
	"time"

	"github.com/migration-aware/adc/test/e2e/cluster"
)

// The cloud, wired in every mode: k8s.io/cloud-provider's cloud node lifecycle controller,
// run by cluster.Start with the test cloud, taints a NotReady node whose machine the cloud
// reports shut down node.cloudprovider.kubernetes.io/shutdown:NoSchedule (how soon, a few of
// its monitor periods on an idle machine, is reported, not asserted), never a partitioned one
// (kubelet dead, machine running), deletes the Node of a machine that is gone, and takes the taint off once a shut-down machine runs again and
// its node is Ready. Nothing here writes a taint: each comes from a controller. The figures
// are the evidence's delays later scenarios build on (e.g. a detach policy that trusts the
// shutdown taint).
func TestClusterCloudShutdownTaint(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		nodes := groupNodes("cloud")
		shutDown, partitioned := nodes[0], nodes[1]

		// shutDownMachine fails the test unless the taint comes (it waits up to
		// cloudTaintTimeout); how long it took is a figure, not a verdict.
		down := shutDownMachine(ctx, t, c, shutDown)
		t.Logf("node %s tainted shut down %s after it went NotReady (monitor period %s)",
			shutDown, down.shutdownTainted.Sub(down.notReady).Round(10*time.Millisecond), cluster.DefaultTimings.NodeMonitorPeriod)

		part := partitionNode(ctx, t, c, partitioned)
		// The partitioned node's machine deleted: the controller deletes its Node (and so
		// never taints it: checked once more below).
		deleting := time.Now()
		deleted := deleteMachine(ctx, t, c, partitioned)
		figure(t, c.mode, "cloud: NotReady node's machine deleted -> Node deleted", since(deleting, deleted))
		if err := noShutdownTaint(c, partitioned, part.killed); err != nil {
			t.Error(err)
		}

		// Both machines back: the shut-down one's taint comes off once it is Ready; the deleted
		// one's kubelet registers its Node again, so that the group is whole for a rerun.
		startMachine(ctx, t, c, shutDown)
		restarted := time.Now()
		if err := c.stack.StartMachine(partitioned); err != nil {
			t.Fatal(err)
		}
		if err := c.stack.Kubelet(partitioned).WaitRegistered(ctx, restarted, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	})
}
