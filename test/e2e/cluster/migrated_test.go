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

// A migrated in-tree PV through the whole flow: a gce-pd PersistentVolume labelled with its
// zone, bound by the PV controller, placed by the scheduler in that zone (its VolumeZone and
// VolumeBinding filters read the zone label and the node affinity csi-translation-lib derives
// for pd.csi.storage.gke.io), attached through the CSI driver under the translated handle,
// mounted, Running; then drained to the other node of its zone, never to the other zone;
// then deleted and detached.
func TestClusterMigratedGCEPD(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		ctx := t.Context()
		start := time.Now()
		a := deployApp(ctx, t, c, "gce-"+string(c.mode), appSpec{group: "gce", replicas: 1, gceZone: "zone-a"})
		figure(t, c.mode, "gce-pd: created -> pod Running", since(start, time.Now()))
		checkZone := func(node string) {
			t.Helper()
			n, err := c.stack.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if z := n.Labels[v1.LabelTopologyZone]; z != "zone-a" {
				t.Errorf("pod of the zone-a disk placed on node %s in zone %q", node, z)
			}
		}
		pod := a.current(ctx, t, c, a.pod(0))
		checkZone(pod.Spec.NodeName)
		pv := a.pvOf(ctx, t, c, 0)
		handle := a.handles[pv]
		checkMounted(t, c, harness.GCEPDDriver, handle, pod.Spec.NodeName)
		if _, ok := c.rec.First(cluster.Is(cluster.VAAttached, "", harness.VAName(handle, harness.GCEPDDriver, pod.Spec.NodeName))); !ok {
			t.Errorf("no VolumeAttachment of %s for %s on %s seen attached", harness.GCEPDDriver, handle, pod.Spec.NodeName)
		}

		drainNode(t, c, a, "gce-pd drain")
		moved := a.current(ctx, t, c, a.pod(0))
		checkZone(moved.Spec.NodeName)
		if !slices.Contains(groupNodes("gce"), moved.Spec.NodeName) {
			t.Errorf("pod moved to %s, outside its group", moved.Spec.NodeName)
		}

		deleted := time.Now()
		if err := c.stack.Client.AppsV1().StatefulSets(a.ns).Delete(ctx, a.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		detach := waitUnpublished(ctx, t, c, harness.GCEPDDriver, handle, deleted, podTimeout)
		figure(t, c.mode, "gce-pd: deleted -> detached", since(deleted, detach.Time))
		checkDetachOrder(t, c, a)
	})
}
