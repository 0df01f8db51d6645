package adc

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// managedBy returns managedFields saying manager last changed the node's status.volumesAttached.
func managedBy(manager string) []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:volumesAttached":{},"f:conditions":{}}}`)}}
}

// otherWritesStatus plays another controller changing n's status.volumesAttached as manager.
func (f *fixture) otherWritesStatus(n *v1.Node, manager string, vols ...v1.AttachedVolume) *v1.Node {
	f.t.Helper()
	cur := n.DeepCopy()
	cur.ResourceVersion += "1"
	cur.Status.VolumesAttached = vols
	cur.ManagedFields = managedBy(manager)
	f.store(f.nodes, cur)
	f.c.nodeHandler().OnUpdate(n, cur)
	return cur
}

// eventsWithReason drains rec and returns the Events of reason.
func eventsWithReason(rec *record.FakeRecorder, reason string) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			if strings.Contains(e, " "+reason+" ") {
				out = append(out, e)
			}
		default:
			return out
		}
	}
}

// Issue 42: with kube-controller-manager's attach/detach controller still on, adc noticed
// nothing and both wrote: node status changed owner on every write, and where they decide
// differently they would fight. adc now stops writing when it sees the other controller's
// write, says so on the node, and resumes once it has been quiet. Before the fix: "created
// [csi-...] on n1 while kube-controller-manager writes its status".
func TestOtherControllerFencesEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// write plays the other controller's write; it returns whether it is one.
		write func(f *fixture, n *v1.Node) bool
	}{
		{"kube-controller-manager changes a node's status.volumesAttached", func(f *fixture, n *v1.Node) bool {
			f.otherWritesStatus(n, "kube-controller-manager", v1.AttachedVolume{Name: "kubernetes.io/csi/d^other"})
			return true
		}},
		{"a distribution's kube-controller-manager binary (kube-controller-manager-adc) changes the list", func(f *fixture, n *v1.Node) bool {
			f.otherWritesStatus(n, "kube-controller-manager-adc", v1.AttachedVolume{Name: "kubernetes.io/csi/d^other"})
			return true
		}},
		{"kube-controller-manager creates a VolumeAttachment after adc started", func(f *fixture, n *v1.Node) bool {
			va := f.va("other", "pv-other", "n2", "uid-9", "20", false)
			va.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:attacher":{}}}`)}}
			f.store(f.vas, va)
			f.c.vaHandler().OnAdd(va, false)
			return true
		}},
		{"kube-controller-manager's VolumeAttachment listed at start: what it attached before, not a writer", func(f *fixture, n *v1.Node) bool {
			va := f.va("other", "pv-other", "n2", "uid-9", "20", true)
			va.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:attacher":{}}}`)}}
			f.store(f.vas, va)
			f.c.vaHandler().OnAdd(va, true)
			return false
		}},
		{"adc's own status write coming back", func(f *fixture, n *v1.Node) bool {
			f.otherWritesStatus(n, "adc", v1.AttachedVolume{Name: "kubernetes.io/csi/d^other"})
			return false
		}},
		{"a tool's write with a manager of its own", func(f *fixture, n *v1.Node) bool {
			f.otherWritesStatus(n, "kubectl-edit", v1.AttachedVolume{Name: "kubernetes.io/csi/d^other"})
			return false
		}},
		{"kube-controller-manager's other controllers write status, the list unchanged", func(f *fixture, n *v1.Node) bool {
			cur := n.DeepCopy()
			cur.ResourceVersion += "1"
			cur.ManagedFields = managedBy("kube-controller-manager")
			cur.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "again"}}
			f.store(f.nodes, cur)
			f.c.nodeHandler().OnUpdate(n, cur)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(1000)
			f := newFixture(t, Options{Recorder: rec})
			n := f.node("n1")
			f.node("n2")
			f.volume("pv1", "h1", v1.ReadWriteOnce)
			other := tc.write(f, n)
			f.pod("a", "n1", "pv1")
			f.syncNode("n1")
			created := f.att.createdOn("n1")
			warnings := eventsWithReason(rec, "OtherAttachDetachController")
			if !other {
				if len(created) != 1 || len(warnings) != 0 {
					t.Fatalf("created %d on n1 and %d warnings, want 1 create and no warning: %v", len(created), len(warnings), warnings)
				}
				return
			}
			if len(created) != 0 {
				t.Fatalf("created %v on n1 while kube-controller-manager writes, want none", created[0].Name)
			}
			if len(warnings) != 1 {
				t.Fatalf("%d OtherAttachDetachController Events, want 1: %v", len(warnings), warnings)
			}
			if !strings.Contains(warnings[0], "field manager \"kube-controller-manager") {
				t.Errorf("Event %q does not name the other writer", warnings[0])
			}
			// The status worker writes nothing either, and says when to come back.
			if _, err := f.c.attachments.Create(f.ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
				t.Errorf("a queued create went out while fenced")
			}
			f.c.statusQueue.Add("n1")
			f.c.processNextStatus(f.ctx)
			if vols, wrote := f.status.lastWrite(); wrote {
				t.Errorf("wrote status.volumesAttached %v while fenced", attachedNames(vols))
			}
			state := f.c.OtherController()
			if !state.Fenced || !strings.HasPrefix(state.Manager, "kube-controller-manager") {
				t.Errorf("OtherController() = %+v, want fenced by kube-controller-manager", state)
			}

			// Quiet for the quiet period: adc writes again by itself.
			f.clk.Step(state.QuietPeriod + time.Second)
			f.syncNode("n1")
			if got := f.att.createdOn("n1"); len(got) != 1 {
				t.Fatalf("created %d on n1 after the other controller went quiet, want 1", len(got))
			}
			if gone := eventsWithReason(rec, "OtherAttachDetachControllerGone"); len(gone) != 1 {
				t.Errorf("%d OtherAttachDetachControllerGone Events, want 1", len(gone))
			}
			if f.c.OtherController().Fenced {
				t.Errorf("still fenced after the quiet period")
			}
		})
	}
}

// A write seen while fenced extends the fence: the quiet period counts from the last one.
func TestOtherControllerFenceCountsFromTheLastWrite(t *testing.T) {
	f := newFixture(t, Options{OtherControllerQuietPeriod: time.Minute})
	n := f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	n = f.otherWritesStatus(n, "kube-controller-manager", v1.AttachedVolume{Name: "kubernetes.io/csi/d^x"})
	f.clk.Step(50 * time.Second)
	f.otherWritesStatus(n, "kube-controller-manager")
	f.clk.Step(50 * time.Second)
	f.pod("a", "n1", "pv1")
	f.syncNode("n1")
	if got := f.att.createdOn("n1"); len(got) != 0 {
		t.Fatalf("created %d, want none: the second write was 50 s ago", len(got))
	}
	if s := f.c.OtherController(); len(s.Writes) != 1 || s.Writes[0].Count != 2 {
		t.Errorf("writes %+v, want 2 by kube-controller-manager", s.Writes)
	}
	f.clk.Step(11 * time.Second)
	f.syncNode("n1")
	if got := f.att.createdOn("n1"); len(got) != 1 {
		t.Fatalf("created %d after a quiet minute, want 1", len(got))
	}
}
