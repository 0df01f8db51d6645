package adc

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 41, item 10: paths where a VolumeAttachment no pod needs could stay attached with
// nothing queued to look at it again.

// A detach that only the fresh read of the node blocked (the Node cache is behind: the kubelet
// mounted the volume since) is looked at again on its own: the event that shows the unmount
// may come folded into a relist's one update that only lists more, which goes to the status
// writer alone. Before the fix the reconcile returned no retry: "retryAfter = 0s".
func TestDetachBlockedOnlyByTheFreshReadIsRetried(t *testing.T) {
	f := newFixture(t, Options{})
	unique := "kubernetes.io/csi/d^h1"
	f.node("n1")
	f.volume("v1", "h1", v1.ReadWriteOnce)
	va := f.va("h1", "v1", "n1", "uid-1", "10", true)
	f.api(va)
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)
	p := f.pod("p1", "n1", "v1")
	f.syncNode("n1")
	f.syncStatus("n1")

	setVolumesInUse(f, "n1", unique) // the kubelet mounts it; adc's Node cache is behind
	f.deletePod(p)
	retry, err := f.c.syncNode(f.ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.att.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while the kubelet reported the volume in use", got)
	}
	if retry <= 0 {
		t.Fatalf("retryAfter = %s: nothing would look at the detach again", retry)
	}
	setVolumesInUse(f, "n1") // the kubelet unmounts it; still no Node event
	f.clk.Step(retry)
	f.settleNode("n1", 3)
	if got := f.att.deleted(); len(got) != 1 || got[0] != va.Name {
		t.Fatalf("deleted %v, want %s once the kubelet unmounted it", got, va.Name)
	}
}

// A PersistentVolume that comes back (or is re-created for its disk) wakes the nodes its
// volume is attached to, not only the nodes of its claim's pods: their attachments are named
// again. Before the fix: "n1 not queued".
func TestPersistentVolumeBackWakesTheNodesOfItsVolume(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	gone := f.va("h1", "v1", "n1", "uid-1", "10", true)
	f.api(gone)
	f.store(f.vas, gone)
	f.c.vaHandler().OnAdd(gone, false)
	for f.c.nodeQueue.Len() > 0 {
		k, _ := f.c.nodeQueue.Get()
		f.c.nodeQueue.Done(k)
	}
	f.volume("v1-again", "h1", v1.ReadWriteOnce)
	pv, _, _ := f.pvs.GetByKey("v1-again")
	f.c.pvHandler().OnAdd(pv, false)
	queued := map[string]bool{}
	for f.c.nodeQueue.Len() > 0 {
		k, _ := f.c.nodeQueue.Get()
		queued[k] = true
		f.c.nodeQueue.Done(k)
	}
	if !queued["n1"] {
		t.Errorf("n1 not queued (queued %v)", queued)
	}
}

// setVolumesInUse is the kubelet writing status.volumesInUse to the API server only (the
// informer has not shown it).
func setVolumesInUse(f *fixture, node string, unique ...string) {
	f.t.Helper()
	n, err := f.client.CoreV1().Nodes().Get(f.ctx, node, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n.Status.VolumesInUse = nil
	for _, u := range unique {
		n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(u))
	}
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}
