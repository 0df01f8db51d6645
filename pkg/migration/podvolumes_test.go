package migration

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

func claim(ns, name, volume string, phase v1.PersistentVolumeClaimPhase, uid types.UID) v1.PersistentVolumeClaim {
	return v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: volume},
		Status:     v1.PersistentVolumeClaimStatus{Phase: phase},
	}
}

func boundPV(name string, c v1.PersistentVolumeClaim) v1.PersistentVolume {
	pv := *csiPV(name, "d.example.com", "h-"+name)
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	return pv
}

func TestPodVolumes(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "pod-uid"},
		Spec: v1.PodSpec{NodeName: testNode, Volumes: []v1.Volume{
			{Name: "bound", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-bound"}}},
			{Name: "missing", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-missing"}}},
			{Name: "pending", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-pending"}}},
			{Name: "lost", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-lost"}}},
			{Name: "nopv", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-nopv"}}},
			{Name: "stolen", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-stolen"}}},
			{Name: "prebound", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c-prebound"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
			{Name: "foreign", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
			{Name: "notyet", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
			{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
			{Name: "noname", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}},
		}},
	}
	controller := true
	owned := claim("ns", "web-0-scratch", "pv-scratch", v1.ClaimBound, "u-scratch")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "pod-uid", Controller: &controller}}
	foreign := claim("ns", "web-0-foreign", "pv-foreign", v1.ClaimBound, "u-foreign")
	bound := claim("ns", "c-bound", "pv-bound", v1.ClaimBound, "u-bound")
	stolen := claim("ns", "c-stolen", "pv-stolen", v1.ClaimBound, "u-stolen")
	prebound := claim("ns", "c-prebound", "pv-prebound", v1.ClaimBound, "u-prebound")
	stolenPV := boundPV("pv-stolen", claim("other", "thief", "", v1.ClaimBound, "u-thief"))
	preboundPV := boundPV("pv-prebound", prebound)
	preboundPV.Spec.ClaimRef.UID = ""
	idx := NewObjectIndex(Objects{
		PVCs: []v1.PersistentVolumeClaim{
			bound, owned, foreign, stolen, prebound,
			claim("ns", "c-pending", "", v1.ClaimPending, "u-p"),
			claim("ns", "c-lost", "pv-gone", v1.ClaimLost, "u-l"),
			claim("ns", "c-nopv", "pv-nothere", v1.ClaimBound, "u-n"),
			claim("other-ns", "c-missing", "pv-x", v1.ClaimBound, "u-x"), // same name, other namespace
		},
		PVs: []v1.PersistentVolume{boundPV("pv-bound", bound), boundPV("pv-scratch", owned), boundPV("pv-foreign", foreign), stolenPV, preboundPV},
	})

	type exp struct {
		pv      string // expected PV object name, when resolved
		pvName  string // expected PVName
		inline  bool
		pending Mechanism
		reason  string
	}
	want := map[string]exp{
		"bound":    {pv: "pv-bound", pvName: "pv-bound"},
		"missing":  {pending: MechanismWait, reason: `"ns/c-missing" does not exist yet`},
		"pending":  {pending: MechanismWait, reason: "not bound yet (phase Pending)"},
		"lost":     {pending: MechanismError, pvName: "pv-gone", reason: "Lost"},
		"nopv":     {pending: MechanismWait, pvName: "pv-nothere", reason: `"pv-nothere", which does not exist yet`},
		"stolen":   {pending: MechanismError, pvName: "pv-stolen", reason: `bound to claim "other/thief"`},
		"prebound": {pending: MechanismWait, pvName: "pv-prebound", reason: "pre-bound"},
		"scratch":  {pv: "pv-scratch", pvName: "pv-scratch"},
		"foreign":  {pending: MechanismError, reason: "not created for pod"},
		"notyet":   {pending: MechanismWait, reason: "ephemeral volume controller"},
		"config":   {inline: true},
		"noname":   {pending: MechanismError, reason: "names no PersistentVolumeClaim"},
	}
	got := PodVolumes(pod, idx)
	if len(got) != len(pod.Spec.Volumes) {
		t.Fatalf("PodVolumes returned %d volumes, want %d", len(got), len(pod.Spec.Volumes))
	}
	for i, pv := range got {
		if pv.Name != pod.Spec.Volumes[i].Name {
			t.Errorf("volume %d is %q, want spec order %q", i, pv.Name, pod.Spec.Volumes[i].Name)
		}
		w := want[pv.Name]
		t.Run(pv.Name, func(t *testing.T) {
			set := 0
			for _, b := range []bool{pv.PV != nil, pv.Inline != nil, pv.Pending != nil} {
				if b {
					set++
				}
			}
			if set != 1 {
				t.Fatalf("exactly one of PV, Inline, Pending must be set: %+v", pv)
			}
			if w.pv != "" && (pv.PV == nil || pv.PV.Name != w.pv) {
				t.Errorf("PV = %v, want %q", pv.PV, w.pv)
			}
			if pv.PVName != w.pvName {
				t.Errorf("PVName = %q, want %q", pv.PVName, w.pvName)
			}
			if w.inline != (pv.Inline != nil) {
				t.Errorf("Inline set = %v, want %v", pv.Inline != nil, w.inline)
			}
			if w.pending != "" {
				if pv.Pending == nil || pv.Pending.Mechanism != w.pending {
					t.Fatalf("Pending = %+v, want mechanism %s", pv.Pending, w.pending)
				}
				if !strings.Contains(pv.Pending.Reason, w.reason) {
					t.Errorf("Pending.Reason = %q, want it to contain %q", pv.Pending.Reason, w.reason)
				}
				d := DecidePodVolume(cfgWith(NodeSourceCSINode), pv, pod.Namespace, idx.NodeObjects(testNode), idx)
				if d.Mechanism != w.pending || d.Reason != pv.Pending.Reason {
					t.Errorf("DecidePodVolume = %s %q, want the pending decision", d.Mechanism, d.Reason)
				}
			}
		})
	}
	if PodVolumes(nil, idx) != nil {
		t.Errorf("PodVolumes(nil) should be nil")
	}
	for _, pv := range PodVolumes(pod, nil) {
		if pv.Inline == nil && pv.Name != "noname" && (pv.Pending == nil || pv.Pending.Mechanism != MechanismWait) {
			t.Errorf("with a nil lookup, claim volume %q should wait, got %+v", pv.Name, pv.Pending)
		}
	}
}

func TestDecidePodVolumeUsesIndex(t *testing.T) {
	c := claim("ns", "data", "pv-gce", v1.ClaimBound, "u1")
	pv := *gcePV("pv-gce", "pd-1", "us-central1-a")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "u1"}
	idx := NewObjectIndex(Objects{
		PVCs:         []v1.PersistentVolumeClaim{c},
		PVs:          []v1.PersistentVolume{pv},
		CSINodes:     []storagev1.CSINode{*csiNodeWith(gcePlugin)},
		CSINodeInfos: []csinodeinfo.CSINodeInfo{*nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismInTree))},
		CSIDrivers:   []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: gceDriver}, Spec: storagev1.CSIDriverSpec{AttachRequired: boolPtr(false)}}},
		Nodes:        []v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: testNode}}},
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{NodeName: testNode, Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}}}
	vols := PodVolumes(pod, idx)
	node := idx.NodeObjects(testNode)
	if node.Node == nil || node.CSINode == nil || node.CSINodeInfo == nil {
		t.Fatalf("NodeObjects = %+v, want all three objects", node)
	}
	if d := DecidePodVolume(cfgWith(NodeSourceCSINode), vols[0], "ns", node, idx); d.Mechanism != MechanismCSINoAttach {
		t.Errorf("csinode source: %s (%s), want csi-no-attach", d.Mechanism, d.Reason)
	}
	if d := DecidePodVolume(cfgWith(NodeSourceCSINodeInfo), vols[0], "ns", node, idx); d.Mechanism != MechanismInTree {
		t.Errorf("csinodeinfo source: %s (%s), want in-tree", d.Mechanism, d.Reason)
	}
	var nilIdx *ObjectIndex
	if nilIdx.PersistentVolume("x") != nil || nilIdx.CSIDriver("x") != nil || nilIdx.NodeObjects("n").CSINode != nil {
		t.Errorf("a nil index must behave as empty")
	}
	if d := DecidePodVolume(nil, vols[0], "ns", NodeObjects{Name: testNode}, nilIdx); d.Mechanism != MechanismWait {
		t.Errorf("nil index as driver lookup: %s (%s), want wait", d.Mechanism, d.Reason)
	}
}

func TestPodIsActive(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	running := v1.ContainerStatus{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	done := v1.ContainerStatus{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}
	cases := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"nil pod", nil, false},
		{"unscheduled", &v1.Pod{}, false},
		{"scheduled pending", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodPending}}, true},
		{"running", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodRunning}}, true},
		{"succeeded", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodSucceeded}}, false},
		{"failed", &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodFailed}}, false},
		{"deleting with running container", &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: v1.PodSpec{NodeName: "n"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running}}}, true},
		{"deleting with all containers stopped", &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: v1.PodSpec{NodeName: "n"},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{done}}}, false},
	}
	for _, tc := range cases {
		if got := PodIsActive(tc.pod); got != tc.want {
			t.Errorf("%s: PodIsActive = %v, want %v", tc.name, got, tc.want)
		}
	}
}
