package nodeplan

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/migration"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func decision(m migration.Mechanism) *migration.Decision { return &migration.Decision{Mechanism: m} }

func TestPlanPairs(t *testing.T) {
	att := &actual.Attachment{Volume: "kubernetes.io/csi/d^h1"}
	v1ID := actual.Identity{Volume: "kubernetes.io/csi/d^h1"}
	v2ID := actual.Identity{Volume: "kubernetes.io/csi/d^h2"}
	for _, tc := range []struct {
		name     string
		pairs    []Pair
		inTree   bool
		want     []PairStep
		wantWith map[int]int
	}{
		{"attached volume is kept, whatever the new mechanism", []Pair{{Decision: decision(migration.MechanismInTree), ID: v1ID, Attachment: att}}, true, []PairStep{Keep}, nil},
		{"held pair keeps its attachment", []Pair{{Decision: decision(migration.MechanismWait), ID: v1ID, Attachment: att}}, true, []PairStep{KeepHeld}, nil},
		{"wait and error hold", []Pair{{Decision: decision(migration.MechanismWait), ID: v1ID}, {Decision: decision(migration.MechanismError), ID: v2ID}}, true, []PairStep{Hold, Hold}, nil},
		{"no attach needed", []Pair{{Decision: decision(migration.MechanismCSINoAttach), ID: v1ID}, {Decision: decision(migration.MechanismNotAttachable)}}, true, []PairStep{NotNeeded, NotNeeded}, nil},
		{"csi attaches", []Pair{{Decision: decision(migration.MechanismCSI), ID: v1ID}}, false, []PairStep{AttachCSI}, nil},
		{"in-tree attaches with an attacher", []Pair{{Decision: decision(migration.MechanismInTree), ID: v1ID}}, true, []PairStep{AttachInTree}, nil},
		{"in-tree held without one", []Pair{{Decision: decision(migration.MechanismInTree), ID: v1ID}}, false, []PairStep{HoldNoInTreeAttacher}, nil},
		{"two pairs of one volume (two PVs of one disk) attach it once", []Pair{
			{Decision: decision(migration.MechanismCSI), ID: v1ID, Attachment: nil},
			{Decision: decision(migration.MechanismCSI), ID: v2ID},
			{Decision: decision(migration.MechanismCSI), ID: actual.Identity{Volume: v1ID.Volume, PVName: "other-pv"}},
		}, false, []PairStep{AttachCSI, AttachCSI, Shared}, map[int]int{2: 0}},
		{"a held pair does not attach for the others", []Pair{
			{Decision: decision(migration.MechanismWait), ID: v1ID},
			{Decision: decision(migration.MechanismCSI), ID: v1ID},
		}, false, []PairStep{Hold, AttachCSI}, nil},
		{"unknown mechanism", []Pair{{Decision: decision("bogus"), ID: v1ID}}, false, []PairStep{Unknown}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanPairs(tc.pairs, tc.inTree)
			for i, want := range tc.want {
				if got[i].Step != want {
					t.Errorf("pair %d: %s, want %s", i, got[i].Step, want)
				}
				if with, ok := tc.wantWith[i]; ok && got[i].SharedWith != with {
					t.Errorf("pair %d shares pair %d's attach, want %d", i, got[i].SharedWith, with)
				}
			}
		})
	}
}

const unique = "kubernetes.io/csi/d^h1"

func node(mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func inUse(n *v1.Node)  { n.Status.VolumesInUse = []v1.UniqueVolumeName{unique} }
func listed(n *v1.Node) { n.Status.VolumesAttached = []v1.AttachedVolume{{Name: unique}} }
func lost(n *v1.Node) {
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))}}
}
func outOfService(n *v1.Node) {
	n.Spec.Taints = []v1.Taint{{Key: v1.TaintNodeOutOfService, Effect: v1.TaintEffectNoExecute}}
}
func unmanaged(n *v1.Node) { n.Annotations = nil }

func va(uid string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName("h1", "d", "n1"), UID: "uid"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1"}}
}

func TestPlanDetach(t *testing.T) {
	builtIn := migration.CompileDetachPolicies(nil, 6*time.Minute).For(migration.DetachVolume{})
	never := &migration.DetachRule{Policy: "keep", Never: true}
	named := func() *actual.Attachment {
		return &actual.Attachment{VA: va("uid"), UniqueName: unique, Volume: unique, Driver: "d"}
	}
	for _, tc := range []struct {
		name      string
		a         *actual.Attachment
		rule      *migration.DetachRule
		unsent    Unsent
		node      *v1.Node
		fresh     bool
		want      DetachStep
		wantForce migration.Evidence
		wantRetry bool
		reason    string
	}{
		{"being deleted: wait", &actual.Attachment{VA: va("uid"), Deleting: true}, builtIn, NoCreate, node(), false, WaitDeleted, "", false, "being deleted"},
		{"queued create: withdrawn", named(), builtIn, CreateCancelled, node(), false, Withdrawn, "", false, "not sent"},
		{"create in flight: wait for its answer", named(), builtIn, CreateAwaited, node(), false, Blocked, "", false, "in flight"},
		{"cache: in use blocks", named(), builtIn, NoCreate, node(inUse), false, Blocked, "", false, "kubelet reports"},
		{"cache: not in use, read the node", named(), builtIn, NoCreate, node(), false, ReadNode, "", false, ""},
		{"cache: lost node, timeout passed: read the node", named(), builtIn, NoCreate, node(inUse, lost), false, ReadNode, "", false, ""},
		{"cache: lost node, policy holds it", named(), never, NoCreate, node(inUse, lost), false, Blocked, "", false, "holds it"},
		{"fresh: node gone", named(), builtIn, NoCreate, nil, true, Blocked, "", false, "no longer has the node"},
		{"fresh: node unmanaged", named(), builtIn, NoCreate, node(unmanaged), true, Blocked, "", false, "leaves its volumes alone"},
		{"fresh: in use, the cache was behind: look again soon", named(), builtIn, NoCreate, node(inUse), true, Blocked, "", true, "kubelet reports"},
		{"fresh: still listed: unlist first", named(), builtIn, NoCreate, node(listed), true, Unlist, "", false, "removing the volume"},
		{"fresh: detach", named(), builtIn, NoCreate, node(), true, Detach, "", false, "detaching"},
		{"fresh: forced by the timeout", named(), builtIn, NoCreate, node(inUse, lost), true, Detach, migration.EvidenceTimeout, false, "detaching"},
		{"fresh: forced by out-of-service", named(), builtIn, NoCreate, node(inUse, outOfService), true, Detach, migration.EvidenceOutOfService, false, "detaching"},
		{"fresh: PersistentVolume gone, named by its VolumeAttachment name, in use", &actual.Attachment{VA: va("uid"), Driver: "d"}, builtIn, NoCreate, node(inUse), true, Blocked, "", true, "kubelet reports"},
		{"fresh: PersistentVolume gone, listed: unlist", &actual.Attachment{VA: va("uid"), Driver: "d"}, builtIn, NoCreate, node(listed), true, Unlist, "", false, "removing"},
		{"fresh: PersistentVolume gone, nowhere on the node: detach", &actual.Attachment{VA: va("uid"), Driver: "d"}, builtIn, NoCreate, node(), true, Detach, "", false, "detaching"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := PlanDetach(DetachInput{Attachment: tc.a, Rule: tc.rule, Unsent: tc.unsent, Node: tc.node, Fresh: tc.fresh, Now: now})
			if d.Step != tc.want || d.Forced != tc.wantForce {
				t.Fatalf("step %s forced %q (%s), want %s forced %q", d.Step, d.Forced, d.Reason, tc.want, tc.wantForce)
			}
			if (d.RetryIn > 0) != tc.wantRetry && tc.want == Blocked {
				t.Errorf("retryIn %s, want a retry: %v", d.RetryIn, tc.wantRetry)
			}
			if !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tc.reason)
			}
			if (d.Step == Unlist || d.Step == Detach) && tc.a.UniqueName == "" && d.UniqueName == "" && tc.node != nil && len(tc.node.Status.VolumesAttached) > 0 {
				t.Errorf("a listed PV-less volume was not named from the node")
			}
		})
	}
}

// Confirmed plans a forced or evidence-released detach again on the node read right before
// its delete.
func TestConfirmed(t *testing.T) {
	builtIn := migration.CompileDetachPolicies(nil, 6*time.Minute).For(migration.DetachVolume{})
	fencing := &migration.DetachRule{Policy: "fenced", Accepts: []migration.Evidence{migration.EvidenceFenced}, FencingTaints: []string{"fence"}, Timeout: time.Minute}
	released := migration.DetachVerdict{Rule: "fenced", Evidence: migration.EvidenceFenced, ReleasesPods: true, Reason: "fenced"}
	fenced := func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "fence", Effect: v1.TaintEffectNoExecute}} }
	for _, tc := range []struct {
		name     string
		a        *actual.Attachment
		rule     *migration.DetachRule
		node     *v1.Node
		wantSend bool
	}{
		{"still lost past the timeout", &actual.Attachment{VA: va("uid"), UniqueName: unique}, builtIn, node(inUse, lost), true},
		{"Ready again, still in use", &actual.Attachment{VA: va("uid"), UniqueName: unique}, builtIn, node(inUse), false},
		{"Ready again, unmounted meanwhile", &actual.Attachment{VA: va("uid"), UniqueName: unique}, builtIn, node(), true},
		{"node gone", &actual.Attachment{VA: va("uid"), UniqueName: unique}, builtIn, nil, false},
		{"released by fencing, still fenced", &actual.Attachment{VA: va("uid"), UniqueName: unique, Released: &released}, fencing, node(inUse, lost, fenced), true},
		{"released by fencing, the taint gone though the timeout passed: pods keep it", &actual.Attachment{VA: va("uid"), UniqueName: unique, Released: &released}, fencing, node(inUse, lost), false},
		{"released by fencing, not in use, the taint gone: pods keep it", &actual.Attachment{VA: va("uid"), UniqueName: unique, Released: &released}, fencing, node(lost), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := Confirmed(DetachInput{Attachment: tc.a, Rule: tc.rule, Node: tc.node, Fresh: true, Now: now})
			if ok != tc.wantSend {
				t.Errorf("confirmed %v (%s), want %v", ok, why, tc.wantSend)
			}
		})
	}
}
