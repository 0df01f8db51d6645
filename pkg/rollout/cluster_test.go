package rollout_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

const managedAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

func node(name string, managed bool, attached ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		n.Annotations = map[string]string{managedAnnotation: "true"}
	}
	for _, a := range attached {
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(a)})
	}
	return n
}

// csiNode is the node's CSINode with the migrated-plugins annotation ("-" for none) and the
// gce-pd and aws-ebs CSI drivers registered.
func csiNode(name, migrated string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "pd.csi.storage.gke.io", NodeID: name}, {Name: "ebs.csi.aws.com", NodeID: name}}}}
	if migrated != "-" {
		n.Annotations = map[string]string{migration.MigratedPluginsAnnotation: migrated}
	}
	return n
}

// gcePair is a bound claim and GCE PD PV (zone us-central1-a) with the given access mode.
func gcePair(ns, name string, mode v1.PersistentVolumeAccessMode) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	uid := "uid-" + name
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: typesUID(uid)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name, Labels: map[string]string{v1.LabelTopologyZone: "us-central1-a"}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{mode},
			PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-" + name}},
			ClaimRef:               &v1.ObjectReference{Namespace: ns, Name: name, UID: typesUID(uid)}}}
	return pvc, pv
}

func pod(ns, name, node string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func va(name, node, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "pd.csi.storage.gke.io", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
}

// clusterFixture: three managed nodes in every rollout state plus an unmanaged one whose
// pods must not count; gce-pd on, aws-ebs off (node-a reports it migrated: skew).
func clusterFixture() []runtime.Object {
	pvcA, pvA := gcePair("db", "a", v1.ReadWriteOnce)
	pvcShared, pvShared := gcePair("db", "shared", v1.ReadWriteOnce)
	pvcX, pvX := gcePair("db", "x", v1.ReadWriteOnce)
	pvcEBS := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "ebs", UID: "uid-ebs"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-ebs"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pvEBS := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-ebs"}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}},
		ClaimRef:               &v1.ObjectReference{Namespace: "web", Name: "ebs", UID: "uid-ebs"}}}
	return []runtime.Object{
		node("node-a", true), node("node-b", true), node("node-c", true), node("unmanaged", false),
		csiNode("node-a", "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"),
		csiNode("node-b", "kubernetes.io/gce-pd, "+rollouttest.Script),
		// node-c has no CSINode: unknown.
		pvcA, pvA, pvcShared, pvShared, pvcX, pvX, pvcEBS, pvEBS,
		pod("db", "pg-0", "node-a", "a", "shared"),
		pod("db", "pg-1", "node-b", "shared"), // RWO volume attached to node-a: multi-attach
		pod("db", "pg-2", "node-c", "x"),      // node-c unknown: wait
		pod("web", "app", "node-a", "ebs"),    // aws-ebs off, node migrated: skew
		pod("web", "away", "unmanaged", "a", "missing"),
		va(migration.VolumeAttachmentName("projects/UNSPECIFIED/zones/us-central1-a/disks/disk-shared", "pd.csi.storage.gke.io", "node-a"), "node-a", "pv-shared"),
	}
}

func TestFromCluster(t *testing.T) {
	cfg := migration.DefaultConfig().WithModes(map[string]migration.Mode{"kubernetes.io/aws-ebs": migration.ModeOff})
	kube := fake.NewClientset(clusterFixture()...)
	r, err := rollout.FromCluster(context.Background(), plan.Clients{Kube: kube}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != rollout.SourceCluster || r.NodesManaged != 3 || len(r.Operations) != 0 {
		t.Errorf("source %s managed %d operations %d", r.Source, r.NodesManaged, len(r.Operations))
	}
	if got, want := plugin(t, r, "kubernetes.io/gce-pd"), (rollout.PluginRollout{Plugin: "kubernetes.io/gce-pd", Driver: "pd.csi.storage.gke.io",
		Mode: migration.ModeOn, NodesMigrated: 2, NodesUnknown: 1, NodesTotal: 3}); !reflect.DeepEqual(nodeCounts(got), want) {
		t.Errorf("gce-pd = %+v, want %+v", got, want)
	}
	if got := plugin(t, r, "kubernetes.io/aws-ebs"); got.Mode != migration.ModeOff || got.NodesMigrated != 1 || got.NodesNotMigrated != 1 || got.NodesUnknown != 1 {
		t.Errorf("aws-ebs = %+v", got)
	}
	want := map[migration.Mechanism]int{"csi": 3, "csi-no-attach": 0, "in-tree": 0, "not-attachable": 0, "wait": 1, "error": 1}
	if !reflect.DeepEqual(r.VolumesByMechanism, want) {
		t.Errorf("volumesByMechanism = %v, want %v (pods on unmanaged nodes must not count)", r.VolumesByMechanism, want)
	}
	var held, problems []string
	for _, h := range r.Held {
		held = append(held, fmt.Sprintf("%s %s %s %s retries=%d next=%v", h.Node, h.Pod, h.Volume, h.Mechanism, h.Retries, h.NextRetry))
	}
	for _, p := range r.Problems {
		problems = append(problems, fmt.Sprintf("%s %s %s %s", p.Kind, p.Node, p.Pod, p.Volume))
	}
	if w := []string{"node-a web/app ebs error retries=0 next=<nil>", "node-c db/pg-2 x wait retries=0 next=<nil>"}; !reflect.DeepEqual(held, w) {
		t.Errorf("held = %q, want %q", held, w)
	}
	if w := []string{"version-skew node-a web/app ebs", "multi-attach node-b db/pg-1 shared"}; !reflect.DeepEqual(problems, w) {
		t.Errorf("problems = %q, want %q", problems, w)
	}
	if len(r.Notes) != 1 || r.Notes[0].Node != "node-b" || !strings.Contains(r.Notes[0].Message, rollouttest.Script) {
		t.Errorf("notes = %+v", r.Notes)
	}
	// pg-0's two volumes and pg-1's go through CSI, pg-2's waits on the silent node-c.
	gce := plugin(t, r, "kubernetes.io/gce-pd")
	if want := (rollout.VolumePaths{CSI: 3, Held: 1, Total: 4}); gce.VolumesByPath != want {
		t.Errorf("gce-pd volumesByPath = %+v, want %+v", gce.VolumesByPath, want)
	}
	wantReadiness := rollout.Readiness{
		NodesNotMigrated:    []rollout.NodeBlocker{{Node: "node-c", State: "unknown"}},
		VolumesChangingPath: []rollout.PathChange{{Node: "node-c", Pod: "db/pg-2", Volume: "x", PV: "pv-x", From: migration.MechanismWait}},
	}
	if !reflect.DeepEqual(gce.Readiness, wantReadiness) {
		t.Errorf("gce-pd readiness = %+v, want %+v", gce.Readiness, wantReadiness)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("FromCluster issued a %s on %s; it must only list", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestFromClusterMultiAttachFromNodeStatus: an in-tree attachment is only visible in node
// status; a RWX volume never blocks.
func TestFromClusterMultiAttachFromNodeStatus(t *testing.T) {
	pvc, pv := gcePair("db", "rwo", v1.ReadWriteOnce)
	pvcMany, pvMany := gcePair("db", "rox", v1.ReadOnlyMany)
	objs := []runtime.Object{
		node("node-a", true, "kubernetes.io/gce-pd/disk-rwo", "kubernetes.io/gce-pd/disk-rox"), node("node-b", true),
		csiNode("node-a", "-"), csiNode("node-b", "kubernetes.io/gce-pd"),
		pvc, pv, pvcMany, pvMany,
		pod("db", "pg-0", "node-a", "rwo", "rox"),
		pod("db", "pg-1", "node-b", "rwo", "rox"),
	}
	r, err := rollout.FromCluster(context.Background(), plan.Clients{Kube: fake.NewClientset(objs...)}, migration.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || r.Problems[0].Kind != rollout.ProblemMultiAttach || r.Problems[0].Pod != "db/pg-1" || r.Problems[0].Volume != "rwo" ||
		!strings.Contains(r.Problems[0].Reason, `"node-a"`) {
		t.Errorf("problems = %+v, want one multi-attach for db/pg-1 rwo naming node-a", r.Problems)
	}
}

func TestFromClusterErrors(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("list", "volumeattachments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, "", fmt.Errorf("RBAC"))
	})
	_, err := rollout.FromCluster(context.Background(), plan.Clients{Kube: kube}, migration.DefaultConfig())
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "listing volumeattachments") || !strings.Contains(err.Error(), "grant") {
		t.Errorf("error = %v, want a wrapped Forbidden naming the resource and the fix", err)
	}
	if _, err := rollout.FromCluster(context.Background(), plan.Clients{}, migration.DefaultConfig()); err == nil {
		t.Error("no client: want an error")
	}
	bad := migration.DefaultConfig()
	bad.NodeSource = "kubelet"
	if _, err := rollout.FromCluster(context.Background(), plan.Clients{Kube: fake.NewClientset()}, bad); err == nil {
		t.Error("invalid config: want an error")
	}
	// The auto source without a dynamic client treats CSINodeInfos as absent.
	auto := migration.DefaultConfig()
	auto.NodeSource = migration.NodeSourceAuto
	if r, err := rollout.FromCluster(context.Background(), plan.Clients{Kube: fake.NewClientset(clusterFixture()...)}, auto); err != nil || r.NodeSource != migration.NodeSourceAuto {
		t.Errorf("auto source: %v, %s", err, r.NodeSource)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
