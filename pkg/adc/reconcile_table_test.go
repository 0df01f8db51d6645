package adc

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/migration-aware/adc/pkg/migration"
)

// TestReconcileActions drives syncNode and the node status sync (nodestatus.Updater.Sync)
// over a whole controller, in external-attacher's style: initial objects, the steps
// client-go and the workers take, and the API actions expected, in order, with the Events.
// It pins the orders that keep volumes safe: a detach first drops the volume from node
// status, then reads the node fresh, then deletes the VolumeAttachment; a held or blocked
// pair makes no call at all.
func TestReconcileActions(t *testing.T) {
	const csi1 = "kubernetes.io/csi/d^h1"
	listed := func(names ...string) func(*v1.Node) {
		return func(n *v1.Node) {
			for _, u := range names {
				n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(u)})
			}
		}
	}
	inUse := func(names ...string) func(*v1.Node) {
		return func(n *v1.Node) {
			for _, u := range names {
				n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(u))
			}
		}
	}
	outOfService := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: OutOfServiceTaint, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(time.Unix(1_000_000, 0))}}
	}
	type step struct {
		name string
		do   func(f *fixture)
	}
	syncNode := func(n string) step { return step{"sync node " + n, func(f *fixture) { f.syncNode(n) }} }
	syncStatus := func(n string) step { return step{"sync status " + n, func(f *fixture) { f.syncStatus(n) }} }
	attached := step{"the attacher attaches what was created", func(f *fixture) {
		for _, va := range f.att.createdOn("n1") {
			va = va.DeepCopy()
			va.Status.Attached = true
			f.storeVA(va)
		}
	}}
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		steps []step
		want  []string
		// events are the reasons of the Events recorded, in order.
		events []string
	}{
		{
			name: "attach: create, then list in node status once attached",
			setup: func(f *fixture) {
				f.node("n1")
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.pod("p1", "n1", "pv1")
			},
			steps: []step{syncNode("n1"), attached, syncStatus("n1")},
			want:  []string{"create va(h1@n1)", "patch node n1 status [" + csi1 + "]"},
		},
		{
			name: "detach: unlist, then read the node fresh, then delete",
			setup: func(f *fixture) {
				f.node("n1", listed(csi1))
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.storeVA(f.va("h1", "pv1", "n1", "uid-1", "10", true))
			},
			steps: []step{syncNode("n1"), syncStatus("n1"), syncNode("n1")},
			want:  []string{"get node n1", "patch node n1 status []", "get node n1", "delete va(h1@n1)"},
		},
		{
			name: "no detach while the kubelet reports the volume in use",
			setup: func(f *fixture) {
				f.node("n1", listed(csi1), inUse(csi1))
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.storeVA(f.va("h1", "pv1", "n1", "uid-1", "10", true))
			},
			// The cached node already says in use: not even a fresh read.
			steps: []step{syncNode("n1"), syncStatus("n1"), syncNode("n1")},
		},
		{
			name: "forced detach of a volume in use on an out-of-service node",
			setup: func(f *fixture) {
				f.node("n1", listed(csi1), inUse(csi1), outOfService)
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.storeVA(f.va("h1", "pv1", "n1", "uid-1", "10", true))
			},
			steps: []step{syncNode("n1"), syncStatus("n1"), syncNode("n1")},
			// The second read of the last reconcile confirms the forced detach right before
			// its delete (the node may have come back since the reconcile's read).
			want:   []string{"get node n1", "patch node n1 status []", "get node n1", "get node n1", "delete va(h1@n1)"},
			events: []string{ReasonForcedDetach},
		},
		{
			name: "hold: a claim not bound yet makes no call",
			setup: func(f *fixture) {
				f.node("n1")
				f.store(f.pvcs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim-pv1"},
					Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}})
				f.pod("p1", "n1", "pv1")
			},
			steps:  []step{syncNode("n1"), syncStatus("n1")},
			events: []string{ReasonWaitingForClaim},
		},
		{
			name: "multi-attach: a ReadWriteOnce volume attached elsewhere is not attached here",
			setup: func(f *fixture) {
				f.node("n1", listed(csi1), inUse(csi1))
				f.node("n2")
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.storeVA(f.va("h1", "pv1", "n1", "uid-1", "10", true))
				f.pod("p1", "n1", "pv1")
				f.pod("p2", "n2", "pv1")
			},
			steps:  []step{syncNode("n2"), syncStatus("n2")},
			events: []string{ReasonFailedAttach},
		},
		{
			name: "migration flip: a volume attached through CSI stays when its node stops reporting the plugin migrated",
			setup: func(f *fixture) {
				f.node("n1", listed(csi1), inUse(csi1))
				f.volume("pv1", "h1", v1.ReadWriteOnce)
				f.storeVA(f.va("h1", "pv1", "n1", "uid-1", "10", true))
				f.pod("p1", "n1", "pv1")
			},
			steps: []step{syncNode("n1"), syncStatus("n1"), {"the node's CSINode loses the driver and reports nothing migrated", func(f *fixture) {
				f.store(f.csiNodes, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1",
					Annotations: map[string]string{migration.MigratedPluginsAnnotation: ""}}})
				f.c.csiNodeHandler().OnUpdate(nil, nil)
			}}, syncNode("n1"), syncStatus("n1")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(100)
			f := newFixture(t, Options{Recorder: rec})
			tc.setup(f)
			f.actions.take()
			for _, st := range tc.steps {
				st.do(f)
			}
			short := shortVANames("h1", "h2")
			var got []string
			for _, a := range f.actions.take() {
				got = append(got, short.Replace(a))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("API actions:\n  got  %q\n  want %q", got, tc.want)
			}
			var reasons []string
			for len(rec.Events) > 0 {
				fields := strings.Fields(<-rec.Events)
				if len(fields) > 1 {
					reasons = append(reasons, fields[1])
				}
			}
			if !reflect.DeepEqual(reasons, tc.events) {
				t.Errorf("Events: got %q, want %q", reasons, tc.events)
			}
		})
	}
}

// storeVA puts a VolumeAttachment into the API server and the informer store, and tells the
// handler, as client-go does when the watch brings it.
func (f *fixture) storeVA(va *storagev1.VolumeAttachment) {
	f.t.Helper()
	if _, err := f.client.StorageV1().VolumeAttachments().Get(f.ctx, va.Name, metav1.GetOptions{}); err == nil {
		if _, err := f.client.StorageV1().VolumeAttachments().Update(f.ctx, va, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	} else {
		f.api(va.DeepCopy())
	}
	f.store(f.vas, va)
	f.c.vaHandler().OnAdd(va, false)
}

// shortVANames names VolumeAttachments of the test driver on n1 and n2 va(<handle>@<node>).
func shortVANames(handles ...string) *strings.Replacer {
	var pairs []string
	for _, h := range handles {
		for _, n := range []string{"n1", "n2"} {
			pairs = append(pairs, migration.VolumeAttachmentName(h, testDriver, n), "va("+h+"@"+n+")")
		}
	}
	return strings.NewReplacer(pairs...)
}
