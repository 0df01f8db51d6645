package cluster_test

import (
	"testing"
	"time"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// A drain: cordon a node and evict its pods through the eviction API, as `kubectl drain`
// does, with their volumes attached. The kubelet stops the pods and unmounts, the
// attach/detach controller detaches, the StatefulSet controller re-creates each pod, the
// scheduler places it on the other node, and each volume is detached from the old node
// before it is attached to the new one.
func TestClusterDrain(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		a := deployApp(ctx, t, c, "drain-"+string(c.mode), appSpec{group: "drain", replicas: 2})
		drainNode(t, c, a, "drain")
	})
}

// drainNode drains the node of the app's first pod and checks that each of its pods moved,
// its volume detached from the drained node before it was attached to the new one, and
// unmounted before it was detached.
func drainNode(t *testing.T, c *modeCluster, a *app, scenario string) {
	t.Helper()
	ctx := t.Context()
	node := a.current(ctx, t, c, a.pod(0)).Spec.NodeName
	ords, uids := a.podsOn(ctx, t, c, node)
	if err := cordon(ctx, c, node); err != nil {
		t.Fatal(err)
	}
	evicted := time.Now()
	for _, i := range ords {
		if err := evict(ctx, c, a.ns, a.pod(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range ords {
		pv := a.pvOf(ctx, t, c, i)
		p := lostPod{ordinal: i, uid: uids[i], pv: pv, handle: a.handles[pv], va: harness.VAName(a.handles[pv], a.driver, node)}
		detach := waitUnpublished(ctx, t, c, a.driver, p.handle, evicted, podTimeout)
		running := a.waitReplaced(ctx, t, c, i, p.uid, podTimeout)
		if running.Node == node {
			t.Errorf("pod %s re-created on the drained node %s", a.pod(i), node)
		}
		checkMoved(t, c, p, running.Node, a.driver)
		attached, ok := c.rec.First(cluster.Is(cluster.VAAttached, "", harness.VAName(p.handle, a.driver, running.Node)))
		if !ok {
			t.Errorf("VolumeAttachment of %s on %s never seen attached", p.handle, running.Node)
		}
		figure(t, c.mode, scenario+": evicted -> detached from the old node", since(evicted, detach.Time))
		figure(t, c.mode, scenario+": detached -> attached to the new node", since(detach.Time, attached.At))
		figure(t, c.mode, scenario+": evicted -> re-created pod Running", since(evicted, running.At))
	}
	checkDetachOrder(t, c, a)
}
