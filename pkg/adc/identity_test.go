package adc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// Issue 41: one ReadWriteOnce disk is one volume, whatever PersistentVolume names it. Before
// the fix (reservations and the VolumeAttachment index keyed by PersistentVolume name), each
// case below created a second VolumeAttachment of h1 on n2: "n2 creates = 1, want 0".
func TestOneDiskIsAttachedToOneNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup leaves h1 attached (or attaching) to n1 and returns the PV n2's pod uses.
		setup func(f *fixture) string
	}{
		{"two PersistentVolumes name the disk, both pods new", func(f *fixture) string {
			f.volume("pv-a", "h1", v1.ReadWriteOnce)
			f.volume("pv-b", "h1", v1.ReadWriteOnce)
			f.pod("a", "n1", "pv-a")
			f.syncNode("n1")
			return "pv-b"
		}},
		{"the disk is attached through another PersistentVolume", func(f *fixture) string {
			f.volume("pv-a", "h1", v1.ReadWriteOnce)
			f.volume("pv-b", "h1", v1.ReadWriteOnce)
			f.pod("a", "n1", "pv-a")
			va := f.va("h1", "pv-a", "n1", "uid-1", "10", true)
			f.api(va)
			f.store(f.vas, va)
			f.c.vaHandler().OnAdd(va, false)
			return "pv-b"
		}},
		{"the PersistentVolume was re-created while its VolumeAttachment exists", func(f *fixture) string {
			// pv-old is gone from the cache; its VolumeAttachment on n1 is still there.
			f.volume("pv-new", "h1", v1.ReadWriteOnce)
			va := f.va("h1", "pv-old", "n1", "uid-1", "10", true)
			f.api(va)
			f.store(f.vas, va)
			f.c.vaHandler().OnAdd(va, false)
			return "pv-new"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(100)
			f := newFixture(t, Options{Recorder: rec})
			f.node("n1")
			f.node("n2")
			pv := tc.setup(f)
			f.pod("b", "n2", pv)
			f.syncNode("n2")
			if got := f.att.createdOn("n2"); len(got) != 0 {
				t.Fatalf("n2 creates = %d, want 0: the disk would be attached to two nodes", len(got))
			}
			if !eventWith(rec, "Multi-Attach") {
				t.Errorf("no Multi-Attach Event for the waiting pod")
			}
			if states := nodePairs(f.c, "n2"); len(states) != 1 || states[0].Phase != readmodel.PhaseMultiAttach {
				t.Errorf("n2's pair: %+v, want phase %s", states, readmodel.PhaseMultiAttach)
			}
		})
	}
}

// Two pods on one node naming one disk through two PersistentVolumes: one attachment.
func TestOneDiskTwoPersistentVolumesOneNode(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv-a", "h1", v1.ReadWriteOnce)
	f.volume("pv-b", "h1", v1.ReadWriteOnce)
	f.pod("a", "n1", "pv-a")
	f.pod("b", "n1", "pv-b")
	f.syncNode("n1")
	if got := f.att.createdOn("n1"); len(got) != 1 {
		t.Fatalf("n1 creates = %d, want 1", len(got))
	}
}

// An in-tree GCE PD PersistentVolume and a CSI one naming the same disk are one volume.
func TestInTreeAndCSIPersistentVolumesOfOneDisk(t *testing.T) {
	f := newFixture(t, Options{})
	const pd = "pd.csi.storage.gke.io"
	handle := "projects/UNSPECIFIED/zones/z1/disks/disk-1"
	f.store(f.drivers, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: pd}})
	for _, n := range []string{"n1", "n2"} {
		f.node(n)
		f.store(f.csiNodes, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n,
			Annotations: map[string]string{migration.MigratedPluginsAnnotation: "kubernetes.io/gce-pd"}},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: pd, NodeID: "id-" + n}}}})
	}
	inTree := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-gce", Labels: map[string]string{v1.LabelTopologyZone: "z1"}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "claim-pv-gce"}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	csi := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-csi"},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: pd, VolumeHandle: handle}},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "claim-pv-csi"}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	for _, pv := range []*v1.PersistentVolume{inTree, csi} {
		f.store(f.pvs, pv)
		f.store(f.pvcs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim-" + pv.Name},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv.Name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
	}
	f.pod("a", "n1", "pv-gce")
	f.syncNode("n1")
	if got := f.att.createdOn("n1"); len(got) != 1 {
		t.Fatalf("n1 creates = %d, want 1 (states %+v)", len(got), nodePairs(f.c, "n1"))
	}
	f.pod("b", "n2", "pv-csi")
	f.syncNode("n2")
	if got := f.att.createdOn("n2"); len(got) != 0 {
		t.Fatalf("n2 creates = %d, want 0: the disk would be attached to two nodes", len(got))
	}
}

// failingInTree is an in-tree attacher whose attaches fail.
type failingInTree struct{ fakeInTree }

func (f *failingInTree) Attach(context.Context, InTreeVolume, string) (string, error) {
	return "", errors.New("the cloud refused")
}

// Issue 41, defect 4: a failed in-tree attach frees the volume and wakes the nodes waiting
// for it. Before the fix: "n2 was not woken".
func TestFailedInTreeAttachWakesWaiters(t *testing.T) {
	f := newFixture(t, Options{InTreeAttacher: &failingInTree{fakeInTree{attached: map[string]bool{}}}})
	f.node("n1")
	f.node("n2")
	vol := InTreeVolume{Plugin: "kubernetes.io/iscsi", UniqueName: "kubernetes.io/iscsi/p:iqn:0", Name: "kubernetes.io/iscsi/p:iqn:0"}
	key := volumeKeyOf(vol)
	if other := f.c.mem.Reserve("n1", key); other != "" {
		t.Fatalf("free volume held by %q", other)
	}
	if other := f.c.mem.Reserve("n2", key); other != "n1" {
		t.Fatalf("n2 found it held by %q, want n1", other)
	}
	for f.c.nodeQueue.Len() > 0 {
		n, _ := f.c.nodeQueue.Get()
		f.c.nodeQueue.Done(n)
	}
	if _, err := f.c.inTree.Attach(f.ctx, vol, "n1"); err == nil {
		t.Fatal("the attach did not fail")
	}
	woken := false
	for f.c.nodeQueue.Len() > 0 {
		n, _ := f.c.nodeQueue.Get()
		woken = woken || n == "n2"
		f.c.nodeQueue.Done(n)
	}
	if !woken {
		t.Errorf("n2 was not woken")
	}
	if holder := f.c.mem.Reserved(vol.Name); holder != "" {
		t.Errorf("still reserved for %q", holder)
	}
}

// Issue 41, defect 7: a node that loses the managed-attach-detach annotation keeps its in-tree
// attachments in adc's memory while its status lists them, so no other node attaches that
// ReadWriteOnce volume. Before the fix: "n2 found the volume held by \"\"".
func TestUnmanagedNodeKeepsInTreeAttachments(t *testing.T) {
	f := newFixture(t, Options{InTreeAttacher: &fakeInTree{attached: map[string]bool{}}})
	unique := "kubernetes.io/iscsi/p:iqn:0"
	n1 := f.node("n1", func(n *v1.Node) {
		n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique), DevicePath: "/dev/x"}}
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}
	})
	f.syncNode("n1")
	unmanaged := n1.DeepCopy()
	delete(unmanaged.Annotations, ManagedAnnotation)
	f.store(f.nodes, unmanaged)
	f.syncNode("n1")
	if other := f.c.mem.Reserve("n2", volumeKeyOf(InTreeVolume{UniqueName: unique, Name: unique})); other != "n1" {
		t.Fatalf("n2 found the volume held by %q, want n1", other)
	}
}

// Issue 41, defect 8: a detach the evidence of a DetachPolicy allowed (pods still on the node)
// is confirmed on the fresh read right before its delete: the fencing taint gone, the pods
// keep the volume even though the node has been down longer than the policy's timeout.
// Before the fix: "deleted [csi-...] although the fencing taint was gone".
func TestReleasedDetachReconfirmedBeforeTheDelete(t *testing.T) {
	f := newFixture(t, Options{MaxWaitForUnmount: time.Minute})
	f.c.detachRules.Store(migration.CompileDetachPolicies([]*detachv1alpha1.DetachPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: "fenced"},
		Spec: detachv1alpha1.DetachPolicySpec{
			Volumes:  detachv1alpha1.VolumeSelector{Drivers: []string{testDriver}},
			Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceFencing},
			Fencing:  &detachv1alpha1.Fencing{Taints: []string{"fence"}},
			Timeout:  "1m",
		}}}, time.Minute))
	unique := "kubernetes.io/csi/d^h1"
	lost := f.node("n1", func(n *v1.Node) {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(f.clk.Now().Add(-2 * time.Minute))}}
		n.Spec.Taints = []v1.Taint{{Key: "fence", Effect: v1.TaintEffectNoExecute}}
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}
	})
	f.volume("v1", "h1", v1.ReadWriteOnce)
	f.pod("p1", "n1", "v1")
	va := f.va("h1", "v1", "n1", "uid-1", "10", true)
	f.api(va)
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)

	// The fencing taint is gone by the read right before the delete.
	unfenced := lost.DeepCopy()
	unfenced.Spec.Taints = nil
	reads := 0
	f.client.PrependReactor("get", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if reads++; reads > 1 {
			return true, unfenced.DeepCopy(), nil
		}
		return false, nil, nil
	})
	f.syncNodeAllowErr("n1")
	if got := f.att.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v although the fencing taint was gone and pod p1 is still on the node", got)
	}
}

// Issue 41, defect 2: after a restart, an in-tree attachment learned from node status has no
// PersistentVolume, so adc cannot know its StorageClass; while a policy selects by class it
// forces no detach (that policy may say Never), and says why. Before the fix the built-in rule
// force-detached it at --max-wait-for-unmount: "deleted ... want none".
func TestUnknownClassForcesNoDetach(t *testing.T) {
	in := &fakeInTree{attached: map[string]bool{}}
	f := newFixture(t, Options{MaxWaitForUnmount: time.Minute, InTreeAttacher: in})
	f.c.detachRules.Store(migration.CompileDetachPolicies([]*detachv1alpha1.DetachPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: "databases"},
		Spec: detachv1alpha1.DetachPolicySpec{
			Volumes: detachv1alpha1.VolumeSelector{StorageClassNames: []string{"db"}},
			Timeout: detachv1alpha1.TimeoutNever,
		}}}, time.Minute))
	unique := "kubernetes.io/gce-pd/disk-1"
	in.attached[unique] = true
	f.node("n1", func(n *v1.Node) {
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(f.clk.Now().Add(-10 * time.Minute))}}
		n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique), DevicePath: "/dev/x"}}
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}
	})
	f.syncNode("n1")
	if in.attached[unique] == false {
		t.Fatalf("force-detached %s, whose class (and so whose policy) adc cannot know", unique)
	}
	states := nodePairs(f.c, "n1")
	if len(states) != 1 || states[0].Phase != readmodel.PhaseDetachBlocked || !strings.Contains(states[0].Reason, migration.UnknownClassRule) {
		t.Errorf("states %+v, want it blocked by the %s rule", states, migration.UnknownClassRule)
	}
}

// eventWith reports whether the recorder got an Event containing s.
func eventWith(rec *record.FakeRecorder, s string) bool {
	for {
		select {
		case e := <-rec.Events:
			if strings.Contains(e, s) {
				return true
			}
		default:
			return false
		}
	}
}

// nodePairs returns the pair states of one node.
func nodePairs(c *Controller, node string) []readmodel.PairState {
	var out []readmodel.PairState
	for _, st := range c.pairs.All() {
		if st.Node == node {
			out = append(out, st)
		}
	}
	return out
}

// volumeKeyOf is an in-tree volume as memory's ReadWriteOnce check takes it.
func volumeKeyOf(v InTreeVolume) attachstate.Volume {
	return attachstate.Volume{Name: v.Name, InTreeName: v.UniqueName}
}
