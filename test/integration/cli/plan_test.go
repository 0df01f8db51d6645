package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

type planJSON struct {
	Decisions []struct {
		Pod, Volume, PV, Node, Plugin, Driver string
		VolumeHandle                          string `json:"volumeHandle"`
		UniqueName                            string `json:"uniqueName"`
		Mechanism                             string `json:"mechanism"`
		Reason                                string `json:"reason"`
		VolumeAttachment                      string `json:"volumeAttachment"`
	} `json:"decisions"`
	Summary map[string]int `json:"summary"`
}

// `adc plan -o json` on a mid-rollout cluster: nodes migrated, not migrated, not reported
// yet, in version skew; native CSI with and without attach; unbound claims; volumes with no
// attach phase. It runs as a user who may only read, which proves it writes nothing.
func TestPlanJSONOnMidRolloutCluster(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	c := cp.Client
	ns := "plan"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelet := simulator.Kubelet{Client: c}
	for _, n := range []string{"plan-migrated", "plan-intree", "plan-late", "plan-skew"} {
		if _, err := kubelet.RegisterNode(ctx, n, true); err != nil {
			t.Fatal(err)
		}
	}
	must(t, kubelet.ReportCSINode(ctx, "plan-migrated", "kubernetes.io/gce-pd,kubernetes.io/aws-ebs", "pd.csi.storage.gke.io", "csi.example.com"))
	must(t, kubelet.ReportCSINode(ctx, "plan-intree", ""))
	must(t, kubelet.ReportCSINode(ctx, "plan-skew", "kubernetes.io/aws-ebs"))
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "plan-noattach.example.com"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	gce := func(pd string) v1.PersistentVolumeSource {
		return v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pd}}
	}
	boundPod(t, ns, "on-migrated", "plan-migrated", "pv-plan-gce-1", gce("disk-1"))
	boundPod(t, ns, "on-intree", "plan-intree", "pv-plan-gce-2", gce("disk-2"))
	boundPod(t, ns, "on-late", "plan-late", "pv-plan-gce-3", gce("disk-3"))
	boundPod(t, ns, "on-skew", "plan-skew", "pv-plan-ebs-1", v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0abc"}})
	boundPod(t, ns, "native", "plan-migrated", "pv-plan-csi", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h1"}})
	boundPod(t, ns, "noattach", "plan-late", "pv-plan-noattach", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "plan-noattach.example.com", VolumeHandle: "h2"}})
	// An unbound claim, a configMap volume, and pods that must not appear.
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound"},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, ns, "unbound", "plan-intree", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "unbound"}}})
	createPod(t, ns, "config", "plan-intree", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "x"}}}})
	createPod(t, ns, "unscheduled", "", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	done := createPod(t, ns, "finished", "plan-intree", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	done.Status.Phase = v1.PodSucceeded
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := readOnlyKubeconfig(t, cp)
	out, err := exec.Command(adcBinary, "plan", "--kubeconfig", kubeconfig, "-o", "json", "--migration", "kubernetes.io/aws-ebs=off").Output()
	if err != nil {
		t.Fatalf("adc plan: %v\n%s", err, stderrOf(err))
	}
	var got planJSON
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("adc plan -o json is not the documented JSON: %v\n%s", err, out)
	}

	type want struct{ node, mechanism, driver, handle, unique, va, reasonHas string }
	gceHandle := func(pd string) string { return "projects/UNSPECIFIED/zones/us-central1-a/disks/" + pd }
	expect := map[string]want{
		ns + "/on-migrated": {"plan-migrated", "csi", "pd.csi.storage.gke.io", gceHandle("disk-1"),
			"kubernetes.io/csi/pd.csi.storage.gke.io^" + gceHandle("disk-1"), vaName(gceHandle("disk-1"), "pd.csi.storage.gke.io", "plan-migrated"), "migrated"},
		ns + "/on-intree": {"plan-intree", "in-tree", "pd.csi.storage.gke.io", gceHandle("disk-2"), "kubernetes.io/gce-pd/disk-2", "", "not migrated"},
		ns + "/on-late":   {"plan-late", "wait", "pd.csi.storage.gke.io", gceHandle("disk-3"), "", "", "CSINode"},
		ns + "/on-skew":   {"plan-skew", "error", "ebs.csi.aws.com", "vol-0abc", "", "", "version skew"},
		ns + "/native":    {"plan-migrated", "csi", "csi.example.com", "h1", "kubernetes.io/csi/csi.example.com^h1", vaName("h1", "csi.example.com", "plan-migrated"), ""},
		ns + "/noattach":  {"plan-late", "csi-no-attach", "plan-noattach.example.com", "h2", "kubernetes.io/csi/plan-noattach.example.com^h2", "", "attachRequired=false"},
		ns + "/unbound":   {"plan-intree", "wait", "", "", "", "", "not bound"},
		ns + "/config":    {"plan-intree", "not-attachable", "", "", "", "", ""},
	}
	seen := map[string]bool{}
	for _, d := range got.Decisions {
		if !strings.HasPrefix(d.Pod, ns+"/") {
			continue
		}
		w, ok := expect[d.Pod]
		if !ok {
			t.Errorf("unexpected row for pod %s (terminated or unscheduled pods must not appear): %+v", d.Pod, d)
			continue
		}
		seen[d.Pod] = true
		if d.Node != w.node || d.Mechanism != w.mechanism || d.Driver != w.driver || d.VolumeHandle != w.handle || d.UniqueName != w.unique || d.VolumeAttachment != w.va {
			t.Errorf("%s: got node=%s mechanism=%s driver=%s handle=%s unique=%s va=%s\nwant %+v\nreason: %s",
				d.Pod, d.Node, d.Mechanism, d.Driver, d.VolumeHandle, d.UniqueName, d.VolumeAttachment, w, d.Reason)
		}
		if w.reasonHas != "" && !strings.Contains(d.Reason, w.reasonHas) {
			t.Errorf("%s: reason %q does not mention %q", d.Pod, d.Reason, w.reasonHas)
		}
	}
	for pod := range expect {
		if !seen[pod] {
			t.Errorf("no row for pod %s", pod)
		}
	}
	for mech, n := range map[string]int{"csi": 2, "in-tree": 1, "wait": 2, "error": 1, "csi-no-attach": 1, "not-attachable": 1} {
		if got.Summary[mech] < n {
			t.Errorf("summary[%s] = %d, want at least %d (summary %v)", mech, got.Summary[mech], n, got.Summary)
		}
	}

	table, err := exec.Command(adcBinary, "plan", "--kubeconfig", kubeconfig).Output()
	if err != nil {
		t.Fatalf("adc plan (table): %v\n%s", err, stderrOf(err))
	}
	for _, col := range []string{"NODE", "POD", "VOLUME", "PLUGIN", "DRIVER", "MECHANISM", "REASON"} {
		if !strings.Contains(string(table), col) {
			t.Errorf("table output lacks column %s:\n%s", col, table)
		}
	}
}

func vaName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// readOnlyKubeconfig provisions a user who may get, list and watch everything and nothing
// else, and returns a kubeconfig for it.
func readOnlyKubeconfig(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "plan-read-only"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := cp.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "plan-read-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "plan-reader"}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user, err := cp.Env.AddUser(envtest.User{Name: "plan-reader"}, cp.Config)
	if err != nil {
		t.Fatalf("adding the read-only user: %v", err)
	}
	path := filepath.Join(t.TempDir(), "reader.kubeconfig")
	if err := framework.WriteKubeconfig(user.Config(), path); err != nil {
		t.Fatal(err)
	}
	return path
}

func boundPod(t *testing.T, ns, name, node, pvName string, src v1.PersistentVolumeSource) {
	t.Helper()
	ctx := t.Context()
	c := framework.Get(t).Client
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{v1.LabelTopologyZone: "us-central1-a"}},
		Spec:       v1.PersistentVolumeSpec{PersistentVolumeSource: src},
	}
	if _, err := simulator.BindNewClaim(ctx, c, ns, name, pv); err != nil {
		t.Fatal(err)
	}
	createPod(t, ns, name, node, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
}

func createPod(t *testing.T, ns, name, node string, vols ...v1.Volume) *v1.Pod {
	t.Helper()
	pod, err := framework.Get(t).Client.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}, Volumes: vols},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
