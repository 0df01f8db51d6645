package chaos

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The checker's invariants on synthetic event sequences, without a control plane.

const testDriver = "chaos.csi.example.com"

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

type seq struct {
	t   *testing.T
	c   *Checker
	rev int64
}

func newSeq(t *testing.T) *seq { return &seq{t: t, c: NewChecker(5 * time.Second)} }

func (s *seq) put(kind Kind, obj runtime.Object) { s.apply(kind, obj, false) }
func (s *seq) del(kind Kind, obj runtime.Object) { s.apply(kind, obj, true) }

func (s *seq) apply(kind Kind, obj runtime.Object, deleted bool) {
	s.t.Helper()
	s.rev++
	name := obj.(metav1.Object).GetName()
	if err := s.c.Apply(Event{Rev: s.rev, Kind: kind, Name: name, Deleted: deleted, Object: obj, Seen: t0.Add(time.Duration(s.rev) * time.Second)}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *seq) invariants() map[string]int {
	out := map[string]int{}
	for _, v := range s.c.Violations() {
		out[v.Invariant]++
	}
	return out
}

func testNode(name string, ready v1.ConditionStatus, since time.Time, listed, inUse []string, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since)}}
	for _, v := range listed {
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(v), DevicePath: "/dev/x"})
	}
	for _, v := range inUse {
		n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(v))
	}
	return n
}

func testPV(name string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            modes,
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: "h-" + name}},
	}}
}

func testVA(pv, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: VAName("h-"+pv, testDriver, node)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true},
	}
}

func deleting(va *storagev1.VolumeAttachment, at time.Time) *storagev1.VolumeAttachment {
	va = va.DeepCopy()
	ts := metav1.NewTime(at)
	va.DeletionTimestamp = &ts
	return va
}

func TestCheckerDetach(t *testing.T) {
	u := uniqueName(testDriver, "h-v1")
	oos := v1.Taint{Key: outOfServiceTaint, Effect: v1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name string
		node *v1.Node // nil: the node was deleted
		// viaTimestamp deletes through a deletionTimestamp (a finalizer holds the VA),
		// otherwise with a plain DELETE.
		viaTimestamp bool
		want         map[string]int
	}{
		{"listed and in use", testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u}), true, map[string]int{DetachOrder: 1, DetachWhileInUse: 1}},
		{"listed and in use, plain delete", testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u}), false, map[string]int{DetachOrder: 1, DetachWhileInUse: 1}},
		{"in use, not listed", testNode("n1", v1.ConditionTrue, t0, nil, []string{u}), true, map[string]int{DetachWhileInUse: 1}},
		{"listed, not in use", testNode("n1", v1.ConditionTrue, t0, []string{u}, nil), true, map[string]int{DetachOrder: 1}},
		{"unlisted and unused", testNode("n1", v1.ConditionTrue, t0, nil, nil), true, map[string]int{}},
		{"in use on a node not Ready for long", testNode("n1", v1.ConditionUnknown, t0.Add(-time.Hour), nil, []string{u}), true, map[string]int{}},
		{"in use on a node not Ready for a moment", testNode("n1", v1.ConditionFalse, t0, nil, []string{u}), true, map[string]int{DetachWhileInUse: 1}},
		{"in use on an out-of-service node", testNode("n1", v1.ConditionFalse, t0, nil, []string{u}, oos), true, map[string]int{}},
		{"listed on an out-of-service node", testNode("n1", v1.ConditionFalse, t0, []string{u}, []string{u}, oos), true, map[string]int{DetachOrder: 1}},
		{"node deleted", nil, true, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeq(t)
			s.put(KindPersistentVolume, testPV("v1"))
			node := tc.node
			if node == nil {
				node = testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u})
			}
			s.put(KindNode, node)
			va := testVA("v1", "n1")
			s.put(KindVolumeAttachment, va)
			if tc.node == nil {
				s.del(KindNode, node)
			}
			if tc.viaTimestamp {
				s.put(KindVolumeAttachment, deleting(va, t0.Add(time.Second)))
				// Status changes and the final DELETE of a deleting VA are not new decisions.
				s.put(KindVolumeAttachment, deleting(va, t0.Add(time.Second)))
				s.del(KindVolumeAttachment, deleting(va, t0.Add(time.Second)))
			} else {
				s.del(KindVolumeAttachment, va)
			}
			got := s.invariants()
			if len(got) != len(tc.want) {
				t.Fatalf("violations %v, want %v: %v", got, tc.want, s.c.Violations())
			}
			for k, n := range tc.want {
				if got[k] != n {
					t.Fatalf("violations %v, want %v: %v", got, tc.want, s.c.Violations())
				}
			}
			if c := s.c.Counts(); c[DetachOrder] != 1 || c[DetachWhileInUse] != 1 {
				t.Errorf("counts %v, want one detach checked per invariant", c)
			}
		})
	}
}

func TestCheckerMessageNamesTheState(t *testing.T) {
	s := newSeq(t)
	u := uniqueName(testDriver, "h-v1")
	s.put(KindPersistentVolume, testPV("v1"))
	s.put(KindClaim, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "v1"}})
	s.put(KindPod, testPod("p1", "n1", "c1"))
	s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u}))
	va := testVA("v1", "n1")
	s.put(KindVolumeAttachment, va)
	s.put(KindVolumeAttachment, deleting(va, t0))
	v := s.c.Violations()
	if len(v) != 2 {
		t.Fatalf("violations %v, want 2", v)
	}
	for _, want := range []string{"VA " + va.Name, "v1 on n1", "deleted at rv 6", "node state at rv 4", "listed=true inUse=true ready=True", "pods of the claim on the node: 1"} {
		if !strings.Contains(v[0].Message, want) {
			t.Errorf("message %q does not contain %q", v[0].Message, want)
		}
	}
}

func TestCheckerMultiAttach(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []v1.PersistentVolumeAccessMode
		// firstDeleting: the first VA is being deleted (still detaching) when the second
		// is created.
		firstDeleting, firstGone, sameNode bool
		want                               int
	}{
		{name: "ReadWriteOnce on two nodes", want: 1},
		{name: "ReadWriteOnce while the first still detaches", firstDeleting: true, want: 1},
		{name: "ReadWriteOnce after the first is gone", firstDeleting: true, firstGone: true},
		{name: "ReadWriteMany on two nodes", modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}},
		{name: "ReadWriteOnce, same node", sameNode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeq(t)
			s.put(KindPersistentVolume, testPV("v1", tc.modes...))
			s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, nil, nil))
			s.put(KindNode, testNode("n2", v1.ConditionTrue, t0, nil, nil))
			first := testVA("v1", "n1")
			s.put(KindVolumeAttachment, first)
			if tc.firstDeleting {
				s.put(KindVolumeAttachment, deleting(first, t0))
			}
			if tc.firstGone {
				s.del(KindVolumeAttachment, deleting(first, t0))
			}
			second := testVA("v1", "n2")
			if tc.sameNode {
				second.Name = "other-name"
				second.Spec.NodeName = "n1"
			}
			s.put(KindVolumeAttachment, second)
			if got := s.invariants()[MultiAttach]; got != tc.want {
				t.Fatalf("%d multi_attach violations, want %d: %v", got, tc.want, s.c.Violations())
			}
		})
	}
}

func testPod(name, node, claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PodSpec{NodeName: node, Volumes: []v1.Volume{{Name: "d",
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

func TestCheckerConvergence(t *testing.T) {
	s := newSeq(t)
	u := uniqueName(testDriver, "h-v1")
	s.put(KindPersistentVolume, testPV("v1"))
	s.put(KindPersistentVolume, testPV("v2"))
	s.put(KindClaim, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "v1"}})
	s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, nil, nil))
	s.put(KindPod, testPod("p1", "n1", "c1"))
	if got := s.c.Convergence(); len(got) != 1 || !strings.Contains(got[0].Message, "no VA") {
		t.Fatalf("pod without VA: %v", got)
	}
	s.put(KindVolumeAttachment, testVA("v1", "n1"))
	if got := s.c.Convergence(); len(got) != 1 || !strings.Contains(got[0].Message, "not listed") {
		t.Fatalf("VA not listed: %v", got)
	}
	s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u}))
	if got := s.c.Convergence(); len(got) != 0 {
		t.Fatalf("converged state reported: %v", got)
	}
	s.put(KindVolumeAttachment, testVA("v2", "n1"))
	gone := testNode("n9", v1.ConditionTrue, t0, nil, nil)
	s.put(KindNode, gone)
	s.put(KindVolumeAttachment, testVA("v2", "n9"))
	s.del(KindNode, gone)
	got := s.c.Convergence()
	if len(got) != 2 || !strings.Contains(got[0].Message, "no pod using it") || !strings.Contains(got[1].Message, "deleted node n9") {
		t.Fatalf("left-over VAs: %v", got)
	}
}

// A deleted pod keeps its volumes wanted while a container runs, and wants none once none
// runs (upstream's IsPodTerminated), as a pod evicted from a stopped kubelet stays.
func TestCheckerConvergenceDeletedPod(t *testing.T) {
	s := newSeq(t)
	u := uniqueName(testDriver, "h-v1")
	s.put(KindPersistentVolume, testPV("v1"))
	s.put(KindClaim, testClaim("c1", "v1"))
	s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, []string{u}, []string{u}))
	s.put(KindVolumeAttachment, testVA("v1", "n1"))
	pod := testPod("p1", "n1", "c1")
	pod.DeletionTimestamp = &metav1.Time{Time: t0}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	s.put(KindPod, pod)
	if got := s.c.Convergence(); len(got) != 0 {
		t.Fatalf("deleted pod with a running container, attached: %v", got)
	}
	stopped := pod.DeepCopy()
	stopped.Status.ContainerStatuses = nil
	s.put(KindPod, stopped)
	if got := s.c.Convergence(); len(got) != 1 || !strings.Contains(got[0].Message, "no pod using it") {
		t.Fatalf("deleted pod with no container running, still attached: %v", got)
	}
	s.del(KindVolumeAttachment, testVA("v1", "n1"))
	s.put(KindNode, testNode("n1", v1.ConditionTrue, t0, nil, nil))
	if got := s.c.Convergence(); len(got) != 0 {
		t.Fatalf("deleted pod with no container running, detached: %v", got)
	}
}

func TestCheckerRejectsOutOfOrderEvents(t *testing.T) {
	c := NewChecker(time.Second)
	if err := c.Apply(Event{Rev: 5, Kind: KindPersistentVolume, Object: testPV("a")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(Event{Rev: 4, Kind: KindPersistentVolume, Object: testPV("b")}); err == nil {
		t.Fatal("an event at an older revision was accepted")
	}
}

// step is one change of a synthetic event sequence: obj put (created or updated) or deleted.
type step struct {
	kind Kind
	obj  runtime.Object
	del  bool
}

func put(kind Kind, obj runtime.Object) step { return step{kind: kind, obj: obj} }
func del(kind Kind, obj runtime.Object) step { return step{kind: kind, obj: obj, del: true} }

const gceHandlePrefix = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/"

// testInlineVA is the VolumeAttachment adc creates for a pod's inline gce-pd disk on a node
// that migrated gce-pd: the translated spec inline, no PersistentVolume.
func testInlineVA(disk, node string, modes ...v1.PersistentVolumeAccessMode) *storagev1.VolumeAttachment {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	handle := gceHandlePrefix + disk
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: VAName(handle, gceDriver, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: gceDriver, NodeName: node, Source: storagev1.VolumeAttachmentSource{
			InlineVolumeSpec: &v1.PersistentVolumeSpec{AccessModes: modes, PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: gceDriver, VolumeHandle: handle}}}}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true},
	}
}

// testGCEPV is a PersistentVolume of the gce-pd disk, in-tree, whose migrated
// VolumeAttachment names handle projects/UNSPECIFIED/zones/UNSPECIFIED/disks/<disk>.
func testGCEPV(name, disk string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: disk}},
	}}
}

func testInlinePod(name, node, disk string, readOnly bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PodSpec{NodeName: node, Volumes: []v1.Volume{{Name: "d",
		VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: disk, ReadOnly: readOnly}}}}}}
}

func testClaim(name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}}
}

// The invariants cover VolumeAttachments with an inline volume spec, VolumeAttachments whose
// PersistentVolume is gone, and in-tree attachments (node status only, no VolumeAttachment):
// each case is a sequence of changes as etcd records them and the violations it must give.
func TestCheckerInlinePVLessInTree(t *testing.T) {
	inlineU := uniqueName(gceDriver, gceHandlePrefix+"d1")
	csiU := uniqueName(testDriver, "h-v1")
	inTreeU := "kubernetes.io/gce-pd/d1"
	ready := func(name string, listed, inUse []string, taints ...v1.Taint) *v1.Node {
		return testNode(name, v1.ConditionTrue, t0, listed, inUse, taints...)
	}
	oos := v1.Taint{Key: outOfServiceTaint, Effect: v1.TaintEffectNoExecute}
	inlineVA := testInlineVA("d1", "n1")
	pvlessVA := testVA("v1", "n1")
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[string]int
		// covered: coverage counters that must be at least 1.
		covered []string
	}{
		{
			name: "inline VA deleted while listed and in use",
			steps: []step{put(KindNode, ready("n1", []string{inlineU}, []string{inlineU})), put(KindVolumeAttachment, inlineVA),
				put(KindVolumeAttachment, deleting(inlineVA, t0.Add(time.Minute)))},
			want: map[string]int{DetachOrder: 1, DetachWhileInUse: 1}, covered: []string{CoveredInline},
		},
		{
			name: "inline VA deleted after it was unlisted and unmounted",
			steps: []step{put(KindNode, ready("n1", []string{inlineU}, []string{inlineU})), put(KindVolumeAttachment, inlineVA),
				put(KindNode, ready("n1", nil, nil)), del(KindVolumeAttachment, inlineVA)},
			want: map[string]int{}, covered: []string{CoveredInline},
		},
		{
			name: "inline ReadWriteOnce VA created on a second node",
			steps: []step{put(KindNode, ready("n1", nil, nil)), put(KindNode, ready("n2", nil, nil)),
				put(KindVolumeAttachment, inlineVA), put(KindVolumeAttachment, testInlineVA("d1", "n2"))},
			want: map[string]int{MultiAttach: 1},
		},
		{
			name: "inline ReadOnlyMany VA on two nodes",
			steps: []step{put(KindNode, ready("n1", nil, nil)), put(KindNode, ready("n2", nil, nil)),
				put(KindVolumeAttachment, testInlineVA("d1", "n1", v1.ReadOnlyMany)), put(KindVolumeAttachment, testInlineVA("d1", "n2", v1.ReadOnlyMany))},
			want: map[string]int{},
		},
		{
			name: "VA deleted while in use after its PersistentVolume was deleted",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindNode, ready("n1", []string{csiU}, []string{csiU})),
				put(KindVolumeAttachment, pvlessVA), del(KindPersistentVolume, testPV("v1")), del(KindVolumeAttachment, pvlessVA)},
			want: map[string]int{DetachOrder: 1, DetachWhileInUse: 1}, covered: []string{CoveredPVLess},
		},
		{
			name: "VA deleted after unmount and unlisting, its PersistentVolume gone",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindNode, ready("n1", []string{csiU}, []string{csiU})),
				put(KindVolumeAttachment, pvlessVA), del(KindPersistentVolume, testPV("v1")), put(KindNode, ready("n1", nil, nil)),
				put(KindVolumeAttachment, deleting(pvlessVA, t0.Add(time.Minute)))},
			want: map[string]int{}, covered: []string{CoveredPVLess},
		},
		{
			name: "VA created on a second node for a deleted ReadWriteOnce PersistentVolume",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindNode, ready("n1", nil, nil)), put(KindNode, ready("n2", nil, nil)),
				put(KindVolumeAttachment, pvlessVA), del(KindPersistentVolume, testPV("v1")), put(KindVolumeAttachment, testVA("v1", "n2"))},
			want: map[string]int{MultiAttach: 1}, covered: []string{CoveredPVLess},
		},
		{
			name:  "in-tree volume unlisted (detached) while in use",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU})), put(KindNode, ready("n1", nil, []string{inTreeU}))},
			want:  map[string]int{DetachWhileInUse: 1}, covered: []string{CoveredInTree},
		},
		{
			name:  "in-tree volume unlisted after unmount",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU})), put(KindNode, ready("n1", []string{inTreeU}, nil)), put(KindNode, ready("n1", nil, nil))},
			want:  map[string]int{}, covered: []string{CoveredInTree},
		},
		{
			name: "in-tree volume unlisted while in use on an out-of-service node",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU})),
				put(KindNode, testNode("n1", v1.ConditionFalse, t0, nil, []string{inTreeU}, oos))},
			want: map[string]int{},
		},
		{
			name: "in-tree volume unlisted while in use on a node not Ready for long",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU})),
				put(KindNode, testNode("n1", v1.ConditionUnknown, t0.Add(-time.Hour), nil, []string{inTreeU}))},
			want: map[string]int{},
		},
		{
			name:  "in-tree attachments on a deleted node",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU})), del(KindNode, ready("n1", []string{inTreeU}, []string{inTreeU}))},
			want:  map[string]int{},
		},
		{
			name:  "in-tree ReadWriteOnce volume listed on two nodes",
			steps: []step{put(KindNode, ready("n1", []string{inTreeU}, nil)), put(KindNode, ready("n2", []string{inTreeU}, nil))},
			want:  map[string]int{MultiAttach: 1}, covered: []string{CoveredInTree},
		},
		{
			name: "in-tree volume read-only in its pods, listed on two nodes",
			steps: []step{put(KindPod, testInlinePod("p1", "n1", "d1", true)), put(KindPod, testInlinePod("p2", "n2", "d1", true)),
				put(KindNode, ready("n1", []string{inTreeU}, nil)), put(KindNode, ready("n2", []string{inTreeU}, nil))},
			want: map[string]int{},
		},
		{
			name: "migrated inline VA created while the disk is attached in-tree elsewhere",
			steps: []step{put(KindNode, ready("n2", []string{inTreeU}, nil)), put(KindNode, ready("n1", nil, nil)),
				put(KindVolumeAttachment, inlineVA)},
			want: map[string]int{MultiAttach: 1},
		},
		{
			name: "in-tree attach while a migrated VA of the disk's PersistentVolume exists elsewhere",
			steps: []step{put(KindPersistentVolume, testGCEPV("g1", "d1")), put(KindNode, ready("n1", nil, nil)),
				put(KindVolumeAttachment, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-g1"},
					Spec: storagev1.VolumeAttachmentSpec{Attacher: gceDriver, NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptrTo("g1")}}}),
				put(KindNode, ready("n2", []string{inTreeU}, nil))},
			want: map[string]int{MultiAttach: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeq(t)
			for _, st := range tc.steps {
				s.apply(st.kind, st.obj, st.del)
			}
			got := s.invariants()
			if len(got) != len(tc.want) {
				t.Fatalf("violations %v, want %v: %v", got, tc.want, s.c.Violations())
			}
			for k, n := range tc.want {
				if got[k] != n {
					t.Fatalf("violations %v, want %v: %v", got, tc.want, s.c.Violations())
				}
			}
			counts := s.c.Counts()
			for _, k := range tc.covered {
				if counts[k] == 0 {
					t.Errorf("counts %v: %s not counted", counts, k)
				}
			}
		})
	}
}

func ptrTo(s string) *string { return &s }

// Convergence with inline, PV-less and in-tree attachments: what is used must be attached
// and listed, what is not used must be gone.
func TestCheckerConvergenceInlinePVLessInTree(t *testing.T) {
	inlineU := uniqueName(gceDriver, gceHandlePrefix+"d1")
	csiU := uniqueName(testDriver, "h-v1")
	inTreeU := "kubernetes.io/gce-pd/d1"
	ready := func(listed ...string) *v1.Node { return testNode("n1", v1.ConditionTrue, t0, listed, nil) }
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // substrings of the problems, in order
	}{
		{
			name:  "inline volume attached through CSI and listed",
			steps: []step{put(KindNode, ready(inlineU)), put(KindPod, testInlinePod("p1", "n1", "d1", false)), put(KindVolumeAttachment, testInlineVA("d1", "n1"))},
		},
		{
			name:  "inline volume attached in-tree and listed",
			steps: []step{put(KindNode, ready(inTreeU)), put(KindPod, testInlinePod("p1", "n1", "d1", false))},
		},
		{
			name:  "inline volume not attached",
			steps: []step{put(KindNode, ready()), put(KindPod, testInlinePod("p1", "n1", "d1", false))},
			want:  []string{"no VA " + testInlineVA("d1", "n1").Name},
		},
		{
			name:  "inline VA attached but not listed",
			steps: []step{put(KindNode, ready()), put(KindPod, testInlinePod("p1", "n1", "d1", false)), put(KindVolumeAttachment, testInlineVA("d1", "n1"))},
			want:  []string{"attached but not listed"},
		},
		{
			name:  "inline VA with no pod",
			steps: []step{put(KindNode, ready(inlineU)), put(KindVolumeAttachment, testInlineVA("d1", "n1"))},
			want:  []string{"no pod using it"},
		},
		{
			name:  "in-tree volume listed with no pod",
			steps: []step{put(KindNode, ready(inTreeU))},
			want:  []string{"in-tree volume " + inTreeU + " left listed"},
		},
		{
			name: "PV-less VA still used by a pod of its claim",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindClaim, testClaim("c1", "v1")), put(KindNode, ready(csiU)),
				put(KindPod, testPod("p1", "n1", "c1")), put(KindVolumeAttachment, testVA("v1", "n1")), del(KindPersistentVolume, testPV("v1"))},
		},
		{
			name: "PV-less VA no pod uses",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindClaim, testClaim("c1", "v1")), put(KindNode, ready()),
				put(KindVolumeAttachment, testVA("v1", "n1")), del(KindPersistentVolume, testPV("v1"))},
			want: []string{"(v1 (deleted) on n1) left with no pod"},
		},
		{
			name: "CSI volume listed without a VA",
			steps: []step{put(KindPersistentVolume, testPV("v1")), put(KindClaim, testClaim("c1", "v1")), put(KindNode, ready(csiU)),
				put(KindPod, testPod("p1", "n1", "c1"))},
			want: []string{"no VA", csiU + " listed on n1 without"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeq(t)
			for _, st := range tc.steps {
				s.apply(st.kind, st.obj, st.del)
			}
			got := s.c.Convergence()
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Message, w) {
					t.Errorf("problem %d %q does not contain %q", i, got[i].Message, w)
				}
			}
		})
	}
}

// A convergence problem names what `adc explain` explains when a run does not converge.
func TestStuckTarget(t *testing.T) {
	for _, tc := range []struct{ message, kind, name string }{
		{"pod chaos/p-001-3 on n-02: VA csi-1 of v-001 not attached", "pod", "chaos/p-001-3"},
		{"VA csi-2 (v-014 on n-10) left with no pod using it on the node (deleting=false)", "pv", "v-014"},
		{"VA csi-3 (v-014 (deleted) on n-10) left with no pod using it on the node (deleting=false)", "", ""},
		{"VA csi-4 (inline:h-1 on n-10) left with no pod using it on the node (deleting=false)", "", ""},
		{"VA csi-5 (v-001) left on deleted node n-05", "", ""},
	} {
		if kind, name := stuckTarget(tc.message); kind != tc.kind || name != tc.name {
			t.Errorf("stuckTarget(%q) = %q %q, want %q %q", tc.message, kind, name, tc.kind, tc.name)
		}
	}
}

// Of a leader's goroutine dump, only adc's goroutines that are not parked in a queue's Get
// are worth reading when a run does not converge.
func TestBusyGoroutines(t *testing.T) {
	dump := `goroutine 1 [running]:
main.main()

goroutine 7 [sync.Cond.Wait]:
sync.runtime_notifyListWait(0xc0001, 0x2)
sync.(*Cond).Wait(0xc0002)
k8s.io/client-go/util/workqueue.(*Typed[...]).Get(0xc0003)
github.com/migration-aware/adc/pkg/adc.(*Controller).processNextNode(0xc0004, {0x1, 0x2})

goroutine 9 [sync.Mutex.Lock]:
sync.(*Mutex).Lock(...)
github.com/migration-aware/adc/pkg/adc/internal/nodestatus.(*Locks).Lock(...)
github.com/migration-aware/adc/pkg/adc.(*Controller).syncNode(0xc0005, {0x1, 0x2}, {0xc0006, 0x4})

goroutine 11 [select]:
k8s.io/client-go/tools/cache.(*processorListener).run.func1()`
	busy := busyGoroutines(dump)
	if len(busy) != 1 || !strings.HasPrefix(busy[0], "goroutine 9 ") {
		t.Errorf("busyGoroutines = %q, want goroutine 9 only", busy)
	}
}
