package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/preflight"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/integration/framework"
)

func namespace(t *testing.T, name string) {
	t.Helper()
	if _, err := framework.Get(t).Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// From the cluster alone: a ReadWriteOnce volume still attached to a node that is not Ready
// and whose kubelet still reports it in use. explain names the holder and since when, what
// blocks the detach and when adc force-detaches it; explain pv lists the attachment.
func TestExplainReadWriteOnceHolder(t *testing.T) {
	cp := framework.Get(t)
	c := cp.Client
	const ns = "explain-rwo"
	namespace(t, ns)
	node(t, c, "ex-holder", gceDriver)
	node(t, c, "ex-want", gceDriver)
	gcePod(t, c, ns, "app", "ex-want", "ex-disk")
	vaName := attach(t, c, "ex-disk", "ex-holder")
	sick := time.Now().Add(-time.Minute).Truncate(time.Second)
	nodeStatus(t, c, "ex-holder", false, sick, csiUnique("ex-disk"))

	r := explainJSON(t, "pod", ns+"/app", "--kubeconfig", cp.KubeconfigPath, "--max-wait-for-unmount", "6m")
	if len(r.Pods) != 1 || len(r.Pods[0].Volumes) != 1 {
		t.Fatalf("explained %+v, want one pod with one volume", r.Pods)
	}
	v := r.Pods[0].Volumes[0]
	if v.Mechanism != migration.MechanismCSI || v.PV != "ex-disk" || v.Claim != ns+"/ex-disk" || v.Here != nil {
		t.Errorf("volume: mechanism %s pv %q claim %q here %+v; want csi, ex-disk, %s/ex-disk, not attached here", v.Mechanism, v.PV, v.Claim, v.Here, ns)
	}
	if len(v.Elsewhere) != 1 {
		t.Fatalf("elsewhere = %+v, want the holder", v.Elsewhere)
	}
	h := v.Elsewhere[0]
	wantForced := sick.Add(6 * time.Minute)
	switch {
	case h.Node != "ex-holder" || h.VolumeAttachment != vaName || !h.Exists || !h.Attached || !h.InUse || !h.ListedInStatus || len(h.UsedBy) != 0:
		t.Errorf("holder = %+v, want ex-holder's attached, listed, in-use VolumeAttachment %s used by no pod", h, vaName)
	case h.Detach == nil || h.Detach.ForcedAt == nil || !h.Detach.ForcedAt.Equal(wantForced) || !strings.Contains(h.Detach.Blocked, "reports it in use"):
		t.Errorf("holder's detach = %+v, want blocked by volumesInUse and forced at %s", h.Detach, wantForced)
	case !strings.Contains(v.Next, "ReadWriteOnce and still attached to node ex-holder"):
		t.Errorf("next = %q, want it to name the holder", v.Next)
	}
	var objects []string
	for _, f := range v.DecidedBy {
		objects = append(objects, f.Object)
	}
	want := []string{`PersistentVolumeClaim "ex-disk"`, `PersistentVolume "ex-disk"`, "--migration", `node "ex-want" (--node-migration-source=csinode)`,
		`CSI driver pd.csi.storage.gke.io on node "ex-want"`, "CSI driver pd.csi.storage.gke.io (--driver-info-source=csidriver)"}
	if strings.Join(objects, "|") != strings.Join(want, "|") {
		t.Errorf("decided by %q, want %q", objects, want)
	}

	pv := explainJSON(t, "pv", "ex-disk", "--kubeconfig", cp.KubeconfigPath)
	if len(pv.Pods) != 1 || pv.Pods[0].Name != "app" || len(pv.Attachments) != 1 || pv.Attachments[0].Node != "ex-holder" {
		t.Errorf("explain pv: pods %+v attachments %+v, want app and the attachment to ex-holder", pv.Pods, pv.Attachments)
	}
	text, _, code := runADC(t, "explain", "pod", ns+"/app", "--kubeconfig", cp.KubeconfigPath)
	t.Logf("adc explain pod %s/app (exit %d):\n%s", ns, code, text)
}

// Bad input exits 2 with an error saying what to fix.
func TestExplainBadInput(t *testing.T) {
	cp := framework.Get(t)
	namespace(t, "explain-bad")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a pod that does not exist", []string{"pod", "explain-bad/missing"}, "pod explain-bad/missing not found; list them with kubectl get pods -n explain-bad"},
		{"a PersistentVolume that does not exist", []string{"pv", "nope"}, `PersistentVolume "nope" not found`},
		{"a pod without namespace", []string{"pod", "missing"}, `pod "missing": name it as NAMESPACE/NAME`},
		{"something else than a pod or volume", []string{"node", "ex-want"}, `cannot explain "node": explain a pod (pod NAMESPACE/NAME) or a PersistentVolume (pv NAME)`},
		{"a controller that does not answer", []string{"pod", "explain-bad/x", "--controller", "http://127.0.0.1:1"}, "the controller at http://127.0.0.1:1 did not answer"},
		{"a controller URL that is no URL", []string{"pod", "explain-bad/x", "--controller", "localhost:8080"}, "is not an http(s) URL"},
		{"no target", []string{"pod"}, "accepts 2 arg(s), received 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runADC(t, append(append([]string{"explain"}, tc.args...), "--kubeconfig", cp.KubeconfigPath)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// With a running controller: a node whose kubelet reported gce-pd migrated but has not
// registered the CSI driver. adc holds the volume (no VolumeAttachment) with a stated reason
// and retries; `adc explain --controller` shows the hold with the controller's retries, the
// controller's /explain and /preflight pages say the same; once the node lists the driver,
// adc attaches.
func TestExplainWithControllerMemory(t *testing.T) {
	cp := framework.Get(t)
	c := cp.Client
	const ns = "explain-held"
	namespace(t, ns)
	node(t, c, "ex-late")
	gcePod(t, c, ns, "app", "ex-late", "ex-held-disk")
	base := startController(t, cp.KubeconfigPath)

	var held rollout.HeldPair
	framework.Eventually(t.Context(), t, "adc holding the volume and retrying", 30*time.Second, func(ctx context.Context) (bool, string) {
		code, body := httpGet(ctx, base+dashboard.APIPath)
		var r rollout.Report
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		for _, h := range r.Held {
			if h.Pod == ns+"/app" {
				held = h
				return h.Retries >= 1, fmt.Sprintf("held %+v", h)
			}
		}
		return false, fmt.Sprintf("held pairs %+v", r.Held)
	})
	va := migration.VolumeAttachmentName(gceHandle("ex-held-disk"), gceDriver, "ex-late")
	if _, err := c.StorageV1().VolumeAttachments().Get(t.Context(), va, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("VolumeAttachment %s while the node has not registered the driver: err = %v, want NotFound", va, err)
	}
	if !strings.Contains(held.Reason, `waiting for CSI driver "pd.csi.storage.gke.io" to register on node "ex-late"`) {
		t.Errorf("held reason %q does not say it waits for the driver", held.Reason)
	}

	r := explainJSON(t, "pod", ns+"/app", "--kubeconfig", cp.KubeconfigPath, "--controller", base)
	v := r.Pods[0].Volumes[0]
	switch {
	case r.Controller == nil || r.Controller.Address != base || r.Controller.Standby || len(r.Controller.NotExposed) == 0:
		t.Errorf("controller = %+v, want %s, leading, with what it does not expose", r.Controller, base)
	case v.Mechanism != migration.MechanismWait || v.WaitCause != migration.WaitDriverRegistration:
		t.Errorf("decision %s (%s), want wait (driver-registration)", v.Mechanism, v.WaitCause)
	case v.Controller == nil || v.Controller.Held == nil || v.Controller.Held.Retries < 1:
		t.Errorf("controller memory %+v, want the hold with its retries", v.Controller)
	}
	text, _, _ := runADC(t, "explain", "pod", ns+"/app", "--kubeconfig", cp.KubeconfigPath, "--controller", base)
	t.Logf("adc explain pod %s/app --controller %s:\n%s", ns, base, text)

	if code, body := httpGet(t.Context(), base+dashboard.ExplainPath+"?pod="+ns+"/app"); code != http.StatusOK || !strings.Contains(body, "driver-registration") || !strings.Contains(body, "held: waiting for CSI driver") {
		t.Errorf("GET /explain = %d, want the page with the hold:\n%s", code, body)
	}
	if code, body := httpGet(t.Context(), base+dashboard.ExplainAPIPath+"?pod="+ns+"/missing"); code != http.StatusNotFound {
		t.Errorf("GET /api/v1/explain of a missing pod = %d %s, want 404", code, body)
	}
	code, body := httpGet(t.Context(), base+dashboard.PreflightAPIPath+"?plugin=gce-pd&to=complete")
	var pre preflight.Report
	if code != http.StatusOK || json.Unmarshal([]byte(body), &pre) != nil {
		t.Fatalf("GET /api/v1/preflight = %d %s", code, body)
	}
	found := false
	for _, f := range pre.Findings {
		found = found || (f.Check == preflight.CheckDriverNotRegistered && f.Node == "ex-late" && f.Severity == preflight.Blocks)
	}
	if found == pre.OK {
		t.Errorf("preflight from the controller: ok %v, findings %+v; want it blocked by driver-not-registered on ex-late", pre.OK, pre.Findings)
	}

	// The node's kubelet registers the driver: adc attaches.
	if err := (simulatorKubelet(c)).ReportCSINode(t.Context(), "ex-late", gcePlugin, gceDriver); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t.Context(), t, "VolumeAttachment once the driver is registered", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := c.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}
