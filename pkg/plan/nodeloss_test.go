package plan

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// The node-loss rows of adc plan and adc status: one per volume node status lists on a
// managed node that is not Ready, with its rule's outlook; nothing for Ready nodes.
func TestNodeLossFromObjects(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	node := func(name string, ready v1.ConditionStatus, taints ...string) v1.Node {
		n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{migration.ManagedAnnotation: "true"}}}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule})
		}
		n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(migration.CSIUniqueName("d.csi", "h-"+name))}}
		return n
	}
	pv := func(name, class string) v1.PersistentVolume {
		return v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: v1.PersistentVolumeSpec{StorageClassName: class,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi", VolumeHandle: "h-" + name}}}}
	}
	objs := migration.Objects{
		Nodes: []v1.Node{node("ready", v1.ConditionTrue), node("off", v1.ConditionUnknown, migration.CloudShutdownTaint), node("cut", v1.ConditionUnknown), node("plain", v1.ConditionFalse)},
		PVs:   []v1.PersistentVolume{pv("ready", "fast"), pv("off", "fast"), pv("cut", "fast"), pv("plain", "slow")},
	}
	policies := []detachv1alpha1.DetachPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Spec: detachv1alpha1.DetachPolicySpec{
		Volumes: detachv1alpha1.VolumeSelector{StorageClassNames: []string{"fast"}}, Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceCloudShutdown},
		Timeout: detachv1alpha1.TimeoutNever}}}
	rows := NodeLossFromObjects(objs, policies, 6*time.Minute, now)
	want := map[string]func(NodeLossVolume) bool{
		"cut": func(n NodeLossVolume) bool { return n.Held && n.Rule == "fast" && n.PV == "pv-cut" },
		"off": func(n NodeLossVolume) bool { return n.DetachNow && n.Evidence == migration.EvidenceCloudShutdown },
		"plain": func(n NodeLossVolume) bool {
			return n.Rule == migration.BuiltInRule && n.DetachAt != nil && n.DetachAt.Equal(now.Add(5*time.Minute))
		},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		if ok := want[r.Node]; ok == nil || !ok(r) {
			t.Errorf("row of node %s: %+v", r.Node, r)
		}
	}
}
