package plan

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

const allMigrated = "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"

func pod(ns, name, node string, phase v1.PodPhase, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node, Volumes: vols}, Status: v1.PodStatus{Phase: phase}}
}

func claimVol(name, claim string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func boundPair(ns, claim, pvName string, src v1.PersistentVolumeSource) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	uid := "uid-" + claim
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim, UID: typesUID(uid)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pvName}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{"topology.kubernetes.io/zone": "us-central1-a"}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef: &v1.ObjectReference{Namespace: ns, Name: claim, UID: typesUID(uid)}}}
	return pvc, pv
}

// fixture is a cluster with nodes in every rollout state:
//   - node-migrated: CSINode lists all seven plugins, and the GCE PD and EBS drivers registered
//   - node-intree:   CSINode without the annotation, the NFS driver registered
//   - node-new:      no CSINode yet (only a CSINodeInfo saying csi for the GCE PD driver)
func fixture() []runtime.Object {
	gce := v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-1"}}
	gce2 := v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-2"}}
	ebs := v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0abc"}}
	nfs := v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "nfs.csi.k8s.io", VolumeHandle: "srv#share"}}
	pvcGCE, pvGCE := boundPair("db", "data-pg-0", "pv-gce", gce)
	pvcGCE2, pvGCE2 := boundPair("db", "data-pg-1", "pv-gce-2", gce2)
	pvcEBS, pvEBS := boundPair("web", "cache", "pv-ebs", ebs)
	pvcNFS, pvNFS := boundPair("web", "shared", "pv-nfs", nfs)
	pvcEmpty, pvEmpty := boundPair("web", "broken", "pv-empty", v1.PersistentVolumeSource{})
	pending := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "pending"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
	attachFalse := false
	return []runtime.Object{
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-migrated"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-intree"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-new"}},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-migrated", Annotations: map[string]string{migration.MigratedPluginsAnnotation: allMigrated}},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "pd.csi.storage.gke.io", NodeID: "m"}, {Name: "ebs.csi.aws.com", NodeID: "m"}}}},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-intree"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "nfs.csi.k8s.io", NodeID: "i"}}}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "nfs.csi.k8s.io"}, Spec: storagev1.CSIDriverSpec{AttachRequired: &attachFalse}},
		pvcGCE, pvGCE, pvcGCE2, pvGCE2, pvcEBS, pvEBS, pvcNFS, pvNFS, pvcEmpty, pvEmpty, pending,
		pod("db", "pg-0", "node-migrated", v1.PodRunning, claimVol("data", "data-pg-0"),
			v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}),
		pod("db", "pg-1", "node-new", v1.PodPending, claimVol("data", "data-pg-1")),
		pod("web", "app-0", "node-intree", v1.PodRunning, claimVol("cache", "cache"), claimVol("shared", "shared"),
			claimVol("broken", "broken"), claimVol("pending", "pending"), claimVol("missing", "nope")),
		pod("web", "done", "node-migrated", v1.PodSucceeded, claimVol("cache", "cache")),
		pod("web", "unscheduled", "", v1.PodPending, claimVol("cache", "cache")),
	}
}

func infoObject(t *testing.T) runtime.Object {
	u, err := csinodeinfo.ToUnstructured(&csinodeinfo.CSINodeInfo{
		ObjectMeta: metav1.ObjectMeta{Name: "node-new"},
		Status: csinodeinfo.CSINodeInfoStatus{Drivers: []csinodeinfo.CSIDriverInfoStatus{
			{Name: "pd.csi.storage.gke.io", Available: true, VolumePluginMechanism: csinodeinfo.VolumePluginMechanismCSI},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func dynamicClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{
			csinodeinfo.GroupVersionResource:    csinodeinfo.ListKind,
			seedcsidriver.GroupVersionResource:  seedcsidriver.ListKind,
			detachv1alpha1.GroupVersionResource: detachv1alpha1.ListKind,
		}, objs...)
}

func vaName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

func rowsByKey(r Report) map[string]Row {
	m := map[string]Row{}
	for _, row := range r.Decisions {
		m[row.Pod+"/"+row.Volume] = row
	}
	return m
}

func TestBuildCSINodeSource(t *testing.T) {
	kube := fake.NewClientset(fixture()...)
	cfg := migration.DefaultConfig()
	r, err := Build(context.Background(), Clients{Kube: kube, Dynamic: dynamicClient(infoObject(t))}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsByKey(r)
	gceHandle := "projects/UNSPECIFIED/zones/us-central1-a/disks/pd-1"
	want := map[string]struct {
		mech   migration.Mechanism
		node   string
		pv     string
		va     string
		reason string
	}{
		"db/pg-0/data":      {migration.MechanismCSI, "node-migrated", "pv-gce", vaName(gceHandle, "pd.csi.storage.gke.io", "node-migrated"), "is migrated"},
		"db/pg-0/config":    {migration.MechanismNotAttachable, "node-migrated", "", "", "no attach phase"},
		"db/pg-1/data":      {migration.MechanismWait, "node-new", "pv-gce-2", "", `CSINode "node-new" does not exist yet`},
		"web/app-0/cache":   {migration.MechanismInTree, "node-intree", "pv-ebs", "", "not migrated"},
		"web/app-0/shared":  {migration.MechanismCSINoAttach, "node-intree", "pv-nfs", "", "attachRequired=false"},
		"web/app-0/broken":  {migration.MechanismError, "node-intree", "pv-empty", "", "no volume source"},
		"web/app-0/pending": {migration.MechanismWait, "node-intree", "", "", "not bound yet"},
		"web/app-0/missing": {migration.MechanismWait, "node-intree", "", "", "does not exist yet"},
	}
	if len(got) != len(want) {
		t.Errorf("got %d rows, want %d (terminated and unscheduled pods must be skipped): %v", len(got), len(want), keysOf(got))
	}
	for key, w := range want {
		row, ok := got[key]
		if !ok {
			t.Errorf("missing row %s", key)
			continue
		}
		if row.Mechanism != w.mech || row.Node != w.node || row.PV != w.pv || row.VolumeAttachment != w.va || !strings.Contains(row.Reason, w.reason) {
			t.Errorf("row %s = %+v\nwant mechanism %s node %s pv %q va %q reason ~ %q", key, row, w.mech, w.node, w.pv, w.va, w.reason)
		}
	}
	if r.Summary[migration.MechanismWait] != 3 || r.Summary[migration.MechanismCSI] != 1 || r.Summary[migration.MechanismError] != 1 {
		t.Errorf("summary = %v", r.Summary)
	}
	// Build only reads.
	for _, a := range kube.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("Build issued a %s on %s; it must only list", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestBuildAutoSourceUsesCSINodeInfo(t *testing.T) {
	cfg := migration.DefaultConfig()
	cfg.NodeSource = migration.NodeSourceAuto
	dyn := dynamicClient(infoObject(t))
	r, err := Build(context.Background(), Clients{Kube: fake.NewClientset(fixture()...), Dynamic: dyn}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := rowsByKey(r)["db/pg-1/data"]
	if row.Mechanism != migration.MechanismCSI || !strings.Contains(row.Reason, "CSINodeInfo") {
		t.Errorf("node-new with auto source: %+v, want csi from the CSINodeInfo", row)
	}
	if row := rowsByKey(r)["web/app-0/cache"]; row.Mechanism != migration.MechanismInTree {
		t.Errorf("node-intree with auto source must still use its CSINode: %+v", row)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("Build issued a %s through the dynamic client", a.GetVerb())
		}
	}
}

func TestBuildWithoutCSINodeInfoCRD(t *testing.T) {
	cfg := migration.DefaultConfig()
	cfg.NodeSource = migration.NodeSourceCSINodeInfo
	dyn := dynamicClient()
	dyn.PrependReactor("list", "csinodeinfos", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(csinodeinfo.GroupResource("csinodeinfos"), "")
	})
	r, err := Build(context.Background(), Clients{Kube: fake.NewClientset(fixture()...), Dynamic: dyn}, cfg)
	if err != nil {
		t.Fatalf("a missing CRD must not fail the plan: %v", err)
	}
	if row := rowsByKey(r)["db/pg-0/data"]; row.Mechanism != migration.MechanismWait || !strings.Contains(row.Reason, `CSINodeInfo "node-migrated" does not exist yet`) {
		t.Errorf("row = %+v, want wait naming the CSINodeInfo", row)
	}
	// A nil dynamic client behaves the same.
	if _, err := Build(context.Background(), Clients{Kube: fake.NewClientset(fixture()...)}, cfg); err != nil {
		t.Errorf("nil dynamic client: %v", err)
	}
}

// seedObject is a seed-API CSIDriver for the fixture's nfs.csi.k8s.io, whose
// storage.k8s.io/v1 CSIDriver says attachRequired=false.
func seedObject(t *testing.T, attachRequired *bool) runtime.Object {
	u, err := seedcsidriver.ToUnstructured(&seedcsidriver.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "nfs.csi.k8s.io"},
		Spec: seedcsidriver.CSIDriverSpec{AttachRequired: attachRequired}})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// --driver-info-source decides which CSIDriver object the plan reads, and the reason names it.
func TestBuildDriverInfoSource(t *testing.T) {
	attach := true
	for _, tc := range []struct {
		name     string
		source   migration.DriverSource
		noCRD    bool
		mech     migration.Mechanism
		reason   string
		listSeed bool
	}{
		{"csidriver reads only storage.k8s.io/v1", migration.DriverSourceCSIDriver, false, migration.MechanismCSINoAttach,
			`CSIDriver "nfs.csi.k8s.io" (storage.k8s.io/v1) has attachRequired=false`, false},
		{"seed reads only csi.storage.k8s.io/v1alpha1", migration.DriverSourceSeed, false, migration.MechanismCSI,
			`CSIDriver "nfs.csi.k8s.io" (csi.storage.k8s.io/v1alpha1) has attachRequired=true`, true},
		{"auto prefers storage.k8s.io/v1", migration.DriverSourceAuto, false, migration.MechanismCSINoAttach,
			`CSIDriver "nfs.csi.k8s.io" (storage.k8s.io/v1) has attachRequired=false`, true},
		{"seed without the CRD means no object", migration.DriverSourceSeed, true, migration.MechanismCSI,
			`no CSIDriver "nfs.csi.k8s.io" exists in csi.storage.k8s.io/v1alpha1`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := migration.DefaultConfig()
			cfg.DriverSource = tc.source
			dyn := dynamicClient(seedObject(t, &attach))
			if tc.noCRD {
				dyn.PrependReactor("list", "csidrivers", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewNotFound(seedcsidriver.GroupVersionResource.GroupResource(), "")
				})
			}
			r, err := Build(context.Background(), Clients{Kube: fake.NewClientset(fixture()...), Dynamic: dyn}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			row := rowsByKey(r)["web/app-0/shared"]
			if row.Mechanism != tc.mech || !strings.Contains(row.Reason, tc.reason) {
				t.Errorf("row = %s %q, want %s with reason ~ %q", row.Mechanism, row.Reason, tc.mech, tc.reason)
			}
			listed := false
			for _, a := range dyn.Actions() {
				listed = listed || (a.GetVerb() == "list" && a.GetResource() == seedcsidriver.GroupVersionResource)
			}
			if listed != tc.listSeed {
				t.Errorf("seed CSIDrivers listed = %v, want %v", listed, tc.listSeed)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("RBAC"))
	})
	_, err := Build(context.Background(), Clients{Kube: kube}, migration.DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "listing pods") || !strings.Contains(err.Error(), "grant") || !apierrors.IsForbidden(err) {
		t.Errorf("error = %v, want a wrapped Forbidden naming pods and what to do", err)
	}
	dyn := dynamicClient()
	dyn.PrependReactor("list", "csinodeinfos", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd down"))
	})
	cfg := migration.DefaultConfig()
	cfg.NodeSource = migration.NodeSourceAuto
	if _, err := Build(context.Background(), Clients{Kube: fake.NewClientset(), Dynamic: dyn}, cfg); err == nil || !strings.Contains(err.Error(), "csinodeinfos") {
		t.Errorf("error = %v, want one naming csinodeinfos", err)
	}
	if _, err := Build(context.Background(), Clients{}, cfg); err == nil {
		t.Errorf("no client: want error")
	}
	bad := migration.DefaultConfig()
	bad.NodeSource = "kubelet"
	if _, err := Build(context.Background(), Clients{Kube: fake.NewClientset()}, bad); err == nil {
		t.Errorf("invalid config: want error")
	}
}

func keysOf(m map[string]Row) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func typesUID(s string) types.UID { return types.UID(s) }
