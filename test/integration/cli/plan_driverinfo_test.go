package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// runADC runs the adc binary and returns its stdout and stderr; a non-zero exit fails the test.
func runADC(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(adcBinary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("adc %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// installSeedCSIDriverCRD installs deploy/crds' seed CSIDriver CRD, waits until it is served,
// and removes it when the test ends.
func installSeedCSIDriverCRD(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx := t.Context()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crds", "csi.storage.k8s.io_csidrivers.yaml"))
	if err != nil {
		t.Fatalf("reading the seed CSIDriver CRD manifest: %v", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		t.Fatalf("parsing the seed CSIDriver CRD manifest: %v", err)
	}
	api := cp.Dynamic.Resource(crdResource)
	if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("installing CRD %s: %v", crd.GetName(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := api.Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing CRD %s: %v", crd.GetName(), err)
		}
	})
	framework.Eventually(ctx, t, "seed CSIDrivers served", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := cp.Dynamic.Resource(seedcsidriver.GroupVersionResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// `adc plan` and `adc status` with --driver-info-source: without the CRD the seed source says
// once that it is missing and treats every driver as having no object; with it, each source
// reads its object and every reason names the CSIDriver (kind, API version, name) that
// decided attachRequired.
func TestPlanDriverInfoSource(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	c := cp.Client
	ns := "plan-driverinfo"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelet := simulator.Kubelet{Client: c}
	node := "plan-driverinfo-node"
	if _, err := kubelet.RegisterNode(ctx, node, true); err != nil {
		t.Fatal(err)
	}
	unsetDrv, disagreeDrv, noneDrv := "seed-unset.plan.example.com", "seed-disagree.plan.example.com", "seed-none.plan.example.com"
	must(t, kubelet.ReportCSINode(ctx, node, "", unsetDrv, disagreeDrv, noneDrv))
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: disagreeDrv},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for pod, driver := range map[string]string{"unset": unsetDrv, "disagree": disagreeDrv, "none": noneDrv} {
		boundPod(t, ns, pod, node, "pv-driverinfo-"+pod, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + pod}})
	}
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	must(t, framework.WriteKubeconfig(cp.Config, kubeconfig))

	type row struct{ mechanism, reason string }
	plan := func(t *testing.T, source string) (map[string]row, string) {
		t.Helper()
		out, stderr := runADC(t, "plan", "--kubeconfig", kubeconfig, "-o", "json", "--driver-info-source", source)
		var got planJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("adc plan -o json is not the documented JSON: %v\n%s", err, out)
		}
		rows := map[string]row{}
		for _, d := range got.Decisions {
			if pod, ok := strings.CutPrefix(d.Pod, ns+"/"); ok {
				rows[pod] = row{d.Mechanism, d.Reason}
			}
		}
		return rows, stderr
	}
	type want struct{ mechanism, reason string }
	check := func(t *testing.T, rows map[string]row, wants map[string]want) {
		t.Helper()
		for pod, w := range wants {
			got := rows[pod]
			if got.mechanism != w.mechanism || !strings.Contains(got.reason, w.reason) {
				t.Errorf("%s: plan says %s %q, want %s with reason ~ %q", pod, got.mechanism, got.reason, w.mechanism, w.reason)
			}
		}
	}
	const v1Obj, seedObj = "(storage.k8s.io/v1)", "(csi.storage.k8s.io/v1alpha1)"
	q := func(s string) string { return fmt.Sprintf("%q", s) }

	t.Run("seed without the CRD", func(t *testing.T) {
		rows, stderr := plan(t, "seed")
		if n := strings.Count(stderr, "Seed CSIDriver CRD is not installed"); n != 1 {
			t.Errorf("stderr says the CRD is missing %d times, want once:\n%s", n, stderr)
		}
		check(t, rows, map[string]want{
			"unset":    {"csi", "no CSIDriver " + q(unsetDrv) + " exists in csi.storage.k8s.io/v1alpha1"},
			"disagree": {"csi", "no CSIDriver " + q(disagreeDrv) + " exists in csi.storage.k8s.io/v1alpha1"},
			"none":     {"csi", "no CSIDriver " + q(noneDrv) + " exists in csi.storage.k8s.io/v1alpha1"},
		})
	})

	installSeedCSIDriverCRD(t, cp)
	for name, attach := range map[string]*bool{unsetDrv: nil, disagreeDrv: ptr.To(true)} {
		u, err := seedcsidriver.ToUnstructured(&seedcsidriver.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: seedcsidriver.CSIDriverSpec{AttachRequired: attach}})
		must(t, err)
		if _, err := cp.Dynamic.Resource(seedcsidriver.GroupVersionResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating seed CSIDriver %s: %v", name, err)
		}
	}

	for _, tc := range []struct {
		source string
		wants  map[string]want
	}{
		{"csidriver", map[string]want{
			"unset":    {"csi", "no CSIDriver " + q(unsetDrv) + " exists in storage.k8s.io/v1"},
			"disagree": {"csi-no-attach", "CSIDriver " + q(disagreeDrv) + " " + v1Obj + " has attachRequired=false"},
			"none":     {"csi", "no CSIDriver " + q(noneDrv) + " exists in storage.k8s.io/v1"},
		}},
		{"seed", map[string]want{
			"unset":    {"csi-no-attach", "CSIDriver " + q(unsetDrv) + " " + seedObj + " does not set attachRequired, which means attachRequired=false"},
			"disagree": {"csi", "CSIDriver " + q(disagreeDrv) + " " + seedObj + " has attachRequired=true"},
			"none":     {"csi", "no CSIDriver " + q(noneDrv) + " exists in csi.storage.k8s.io/v1alpha1"},
		}},
		{"auto", map[string]want{
			"unset":    {"csi-no-attach", "CSIDriver " + q(unsetDrv) + " " + seedObj + " does not set attachRequired"},
			"disagree": {"csi-no-attach", "CSIDriver " + q(disagreeDrv) + " " + v1Obj + " has attachRequired=false"},
			"none":     {"csi", "no CSIDriver " + q(noneDrv) + " exists in storage.k8s.io/v1 or csi.storage.k8s.io/v1alpha1"},
		}},
	} {
		t.Run("plan with "+tc.source, func(t *testing.T) {
			rows, stderr := plan(t, tc.source)
			if strings.Contains(stderr, "CRD is not installed") {
				t.Errorf("stderr says the CRD is missing although it is installed:\n%s", stderr)
			}
			check(t, rows, tc.wants)
		})
	}

	t.Run("status counts follow the source", func(t *testing.T) {
		counts := func(source string) map[string]int {
			out, _ := runADC(t, "status", "--kubeconfig", kubeconfig, "-o", "json", "--driver-info-source", source)
			var report struct {
				VolumesByMechanism map[string]int `json:"volumesByMechanism"`
			}
			if err := json.Unmarshal([]byte(out), &report); err != nil {
				t.Fatalf("adc status -o json --driver-info-source %s: %v\n%s", source, err, out)
			}
			return report.VolumesByMechanism
		}
		// Volumes of other tests count the same under both sources; of ours, csidriver skips
		// attach for "disagree" only, auto for "disagree" and "unset".
		base, auto := counts("csidriver"), counts("auto")
		if auto["csi-no-attach"] != base["csi-no-attach"]+1 || auto["csi"] != base["csi"]-1 {
			t.Errorf("volumesByMechanism with auto = %v, with csidriver = %v; want one volume moved from csi to csi-no-attach", auto, base)
		}
	})

	t.Run("an invalid source is refused", func(t *testing.T) {
		out, err := exec.Command(adcBinary, "plan", "--kubeconfig", kubeconfig, "--driver-info-source", "v1alpha1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--driver-info-source") || !strings.Contains(string(out), "csidriver, seed, auto") {
			t.Errorf("adc plan --driver-info-source v1alpha1: err=%v, output %s; want a failure naming the flag and the valid values", err, out)
		}
	})
}
