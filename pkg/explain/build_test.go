package explain

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/rollout"
)

const (
	gcePlugin = "kubernetes.io/gce-pd"
	gceDriver = "pd.csi.storage.gke.io"
	zone      = "us-central1-a"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// world builds a plan.Cluster.
type world struct{ plan.Cluster }

func (w *world) node(name string, ready bool, since time.Time, taints ...v1.Taint) *world {
	status := v1.ConditionTrue
	if !ready {
		status = v1.ConditionUnknown
	}
	w.Objects.Nodes = append(w.Objects.Nodes, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
		Spec:   v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}}})
	return w
}

// status sets a node's volumesAttached and volumesInUse.
func (w *world) status(node string, attached, inUse []string) *world {
	for i := range w.Objects.Nodes {
		if n := &w.Objects.Nodes[i]; n.Name == node {
			for _, a := range attached {
				n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(a)})
			}
			for _, u := range inUse {
				n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(u))
			}
		}
	}
	return w
}

func (w *world) csiNode(name, migrated string, drivers ...string) *world {
	n := storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{migration.MigratedPluginsAnnotation: migrated}}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name})
	}
	w.Objects.CSINodes = append(w.Objects.CSINodes, n)
	return w
}

func (w *world) gcePV(name string, modes ...v1.PersistentVolumeAccessMode) *world {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	uid := types.UID("uid-" + name)
	w.Objects.PVs = append(w.Objects.PVs, v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Spec: v1.PersistentVolumeSpec{AccessModes: modes, ClaimRef: &v1.ObjectReference{Namespace: "db", Name: "claim-" + name, UID: uid},
			PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-" + name}}}})
	w.Objects.PVCs = append(w.Objects.PVCs, v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "claim-" + name, UID: uid},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
	return w
}

func (w *world) pod(name, node string, phase v1.PodPhase, pv string) *world {
	w.Pods = append(w.Pods, v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}, Spec: v1.PodSpec{NodeName: node,
		Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + pv}}}}},
		Status: v1.PodStatus{Phase: phase}})
	return w
}

func (w *world) va(pv, node string, attached bool, attachErr string) *world {
	handle := "projects/UNSPECIFIED/zones/" + zone + "/disks/disk-" + pv
	va := storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(handle, gceDriver, node), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: gceDriver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
	if attachErr != "" {
		va.Status.AttachError = &storagev1.VolumeError{Message: attachErr, Time: metav1.NewTime(now.Add(-time.Minute))}
	}
	w.VolumeAttachments = append(w.VolumeAttachments, va)
	return w
}

func unique(pv string) string {
	return "kubernetes.io/csi/" + gceDriver + "^projects/UNSPECIFIED/zones/" + zone + "/disks/disk-" + pv
}

func TestBuild(t *testing.T) {
	sick := now.Add(-2 * time.Minute)
	pod := func(name string) Target { return Target{Kind: KindPod, Namespace: "db", Name: name} }
	for _, tc := range []struct {
		name   string
		w      *world
		target Target
		ctrl   *rollout.Report
		// want holds substrings of the rendered text, in order.
		want []string
		mech migration.Mechanism
	}{
		{name: "a migrated volume attached, listed and mounted, with the objects that decided it",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).status("n1", []string{unique("pv-a")}, []string{unique("pv-a")}).
				gcePV("pv-a").pod("a", "n1", v1.PodRunning, "pv-a").va("pv-a", "n1", true, ""),
			target: pod("a"), mech: migration.MechanismCSI,
			want: []string{"pod db/a on node n1 (phase Running)", "volume data (claim db/claim-pv-a -> pv pv-a)", "decision: csi:",
				`PersistentVolumeClaim "claim-pv-a": bound to PersistentVolume "pv-a"`, "--migration: kubernetes.io/gce-pd=on",
				`node "n1" (--node-migration-source=csinode): kubernetes.io/gce-pd migrated: CSINode "n1" annotation`,
				`CSI driver pd.csi.storage.gke.io on node "n1": registered: CSINode "n1" spec.drivers lists`,
				`(--driver-info-source=csidriver): no CSIDriver "pd.csi.storage.gke.io" exists in storage.k8s.io/v1`,
				"here: node n1, VolumeAttachment csi-", "attached (created 2026-11-25T11:00:00Z); node status lists it: yes; kubelet reports it in use: yes; used by db/a",
				"next: attached, listed in node status and mounted"}},
		{name: "a ReadWriteOnce volume held by a not-Ready node whose kubelet still uses it: forced detach time",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).node("n2", false, sick).csiNode("n2", gcePlugin, gceDriver).
				status("n2", []string{unique("pv-a")}, []string{unique("pv-a")}).
				gcePV("pv-a").pod("a", "n1", v1.PodPending, "pv-a").va("pv-a", "n2", true, ""),
			target: pod("a"), mech: migration.MechanismCSI,
			want: []string{"here: not attached", "ReadWriteOnce, held by: node n2, VolumeAttachment csi-", "attached (created 2026-11-25T11:00:00Z); node status lists it: yes; kubelet reports it in use: yes\n",
				"detach: the kubelet of node n2 reports it in use (status.volumesInUse): it has not unmounted it yet; node n2: the node has not been Ready since 2026-11-25T11:58:00Z; max-wait-for-unmount (6m0s) forces the detach at 2026-11-25T12:04:00Z",
				"next: it is ReadWriteOnce and still attached to node n2 since 2026-11-25T11:00:00Z; it is attached here once that detach is done"}},
		{name: "an out-of-service node's attachment is force-detached at once",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).node("n2", false, sick, v1.Taint{Key: v1.TaintNodeOutOfService, Effect: v1.TaintEffectNoExecute}).
				status("n2", nil, []string{unique("pv-a")}).gcePV("pv-a").pod("a", "n1", v1.PodPending, "pv-a").va("pv-a", "n2", true, ""),
			target: pod("a"), mech: migration.MechanismCSI,
			want: []string{"detach: node n2: the node has the node.kubernetes.io/out-of-service taint: adc detaches at once, even in use"}},
		{name: "the external-attacher's error on the VolumeAttachment",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).gcePV("pv-a").pod("a", "n1", v1.PodPending, "pv-a").
				va("pv-a", "n1", false, "rpc error: code = ResourceExhausted desc = too many disks"),
			target: pod("a"), mech: migration.MechanismCSI,
			want: []string{"VolumeAttachment csi-", "not attached yet", "attach error (2026-11-25T11:59:00Z): rpc error: code = ResourceExhausted desc = too many disks",
				"next: the external-attacher failed to attach it: rpc error"}},
		{name: "a driver not registered yet holds the volume, with the controller's retries",
			w:      (&world{}).node("n1", true, now).csiNode("n1", gcePlugin).gcePV("pv-a").pod("a", "n1", v1.PodPending, "pv-a"),
			target: pod("a"), mech: migration.MechanismWait,
			ctrl: &rollout.Report{Source: rollout.SourceController, Held: []rollout.HeldPair{{Node: "n1", Pod: "db/a", Volume: "data", Mechanism: migration.MechanismWait,
				Reason: "waiting for CSI driver", Retries: 3, Since: &sick, NextRetry: &now}}},
			want: []string{"decision: wait (driver-registration): waiting for CSI driver \"pd.csi.storage.gke.io\" to register on node \"n1\"",
				`CSI driver pd.csi.storage.gke.io on node "n1": not-registered: CSINode "n1" spec.drivers does not list`,
				"controller: held since 2026-11-25T11:58:00Z, 3 retries, next retry 2026-11-25T12:00:00Z",
				"next: adc holds it (no attach, no detach) until node n1's CSINode lists driver pd.csi.storage.gke.io, and attaches it at once then (the controller holds it since 2026-11-25T11:58:00Z, 3 retries"}},
		{name: "a finished pod's volume no longer in use is detached next",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).status("n1", []string{unique("pv-a")}, nil).
				gcePV("pv-a").pod("a", "n1", v1.PodSucceeded, "pv-a").va("pv-a", "n1", true, ""),
			target: pod("a"), mech: migration.MechanismCSI,
			want: []string{"terminated (phase Succeeded)", "next: the pod no longer needs it: nothing blocks it"}},
		{name: "a pv target lists its pods and every attachment",
			w: (&world{}).node("n1", true, now).csiNode("n1", gcePlugin, gceDriver).node("n2", true, now).csiNode("n2", gcePlugin, gceDriver).
				gcePV("pv-a", v1.ReadOnlyMany).pod("a", "n1", v1.PodRunning, "pv-a").pod("b", "n2", v1.PodRunning, "pv-a").
				va("pv-a", "n1", true, "").va("pv-a", "n2", true, ""),
			target: Target{Kind: KindPV, Name: "pv-a"}, mech: migration.MechanismCSI,
			want: []string{"Explaining pv pv-a", "pod db/a on node n1", "elsewhere: node n2", "used by db/b", "pod db/b on node n2", "attachments of pv pv-a:", "  node n1, VolumeAttachment", "used by db/a", "  node n2, VolumeAttachment", "used by db/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(Options{Config: migration.DefaultConfig(), Controller: tc.ctrl, ControllerAddress: "http://adc"}, tc.target, tc.w.Cluster, now)
			if len(r.Pods) == 0 || len(r.Pods[0].Volumes) == 0 {
				t.Fatalf("no pod or volume explained: %+v", r)
			}
			if m := r.Pods[0].Volumes[0].Mechanism; m != tc.mech {
				t.Errorf("mechanism = %s, want %s", m, tc.mech)
			}
			var b strings.Builder
			if err := RenderText(&b, r); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			rest := out
			for _, want := range tc.want {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Errorf("text lacks (in order) %q\n%s", want, out)
					break
				}
				rest = rest[i+len(want):]
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		kind, ref string
		want      string
		err       string
	}{
		{"pod", "db/pg-0", "pod db/pg-0", ""},
		{"pv", "pv-1", "pv pv-1", ""},
		{"pod", "pg-0", "", "name it as NAMESPACE/NAME"},
		{"pod", "db/PG_0", "", "not a valid name"},
		{"node", "n1", "", "explain a pod (pod NAMESPACE/NAME) or a PersistentVolume (pv NAME)"},
	} {
		got, err := ParseTarget(tc.kind, tc.ref)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseTarget(%s, %s) err = %v, want %q", tc.kind, tc.ref, err, tc.err)
		case tc.err == "" && (err != nil || got.String() != tc.want):
			t.Errorf("ParseTarget(%s, %s) = %v, %v; want %s", tc.kind, tc.ref, got, err, tc.want)
		}
	}
}
