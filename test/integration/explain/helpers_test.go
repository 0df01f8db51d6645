package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

const (
	gcePlugin = "kubernetes.io/gce-pd"
	gceDriver = "pd.csi.storage.gke.io"
	zone      = "us-central1-a"
)

// gceHandle is the translated handle of a gce-pd PersistentVolume labelled with zone.
func gceHandle(pd string) string { return "projects/UNSPECIFIED/zones/" + zone + "/disks/" + pd }

func csiUnique(pd string) string { return "kubernetes.io/csi/" + gceDriver + "^" + gceHandle(pd) }

// node registers a managed node and its CSINode (gce-pd migrated, drivers registered).
func node(t *testing.T, c kubernetes.Interface, name string, drivers ...string) {
	t.Helper()
	k := simulator.Kubelet{Client: c}
	if _, err := k.RegisterNode(t.Context(), name, true); err != nil {
		t.Fatal(err)
	}
	if err := k.ReportCSINode(t.Context(), name, gcePlugin, drivers...); err != nil {
		t.Fatal(err)
	}
}

// gcePod creates a gce-pd PersistentVolume (ReadWriteOnce, zone-labelled), its bound claim
// and a pod using it on node.
func gcePod(t *testing.T, c kubernetes.Interface, ns, pod, node, pd string) {
	t.Helper()
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pd, Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pd}}}}
	if _, err := simulator.BindNewClaim(t.Context(), c, ns, pd, pv); err != nil {
		t.Fatal(err)
	}
	addPod(t, c, ns, pod, node, pd)
}

func addPod(t *testing.T, c kubernetes.Interface, ns, pod, node, claim string) {
	t.Helper()
	if _, err := c.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// attach creates pd's attached VolumeAttachment on node, as adc and the external-attacher
// would have.
func attach(t *testing.T, c kubernetes.Interface, pd, node string) string {
	t.Helper()
	va, err := c.StorageV1().VolumeAttachments().Create(t.Context(), &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(gceHandle(pd), gceDriver, node)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: gceDriver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pd}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	va.Status.Attached = true
	if _, err := c.StorageV1().VolumeAttachments().UpdateStatus(t.Context(), va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return va.Name
}

// nodeStatus sets a node's Ready condition (since the given time) and lists unique in its
// volumesAttached and volumesInUse.
func nodeStatus(t *testing.T, c kubernetes.Interface, name string, ready bool, since time.Time, unique string) {
	t.Helper()
	status := v1.ConditionTrue
	if !ready {
		status = v1.ConditionUnknown
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
		n.Status.VolumesAttached = []v1.AttachedVolume{{Name: v1.UniqueVolumeName(unique)}}
		n.Status.VolumesInUse = []v1.UniqueVolumeName{v1.UniqueVolumeName(unique)}
		_, err = c.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runADC runs the adc binary and returns its stdout, stderr and exit code.
func runADC(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return framework.RunCommand(t, adcBinary, args...)
}

// explainJSON runs `adc explain -o json` and decodes it.
func explainJSON(t *testing.T, args ...string) explain.Report {
	t.Helper()
	out, stderr, code := runADC(t, append([]string{"explain", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("adc explain %s exited %d: %s", strings.Join(args, " "), code, stderr)
	}
	var r explain.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("adc explain -o json is not the documented JSON: %v\n%s", err, out)
	}
	return r
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startController runs the adc binary's controller with its HTTP listener on a free port
// until the test ends and returns the listener's base URL once /readyz answers.
func startController(t *testing.T, kubeconfig string) string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var out bytes.Buffer
	cmd := exec.Command(adcBinary, "controller", "--kubeconfig", kubeconfig, "--http-addr", addr, "--leader-elect=false", "-v", "2")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting adc controller: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("adc controller output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	framework.Eventually(t.Context(), t, "adc controller ready", 30*time.Second, func(ctx context.Context) (bool, string) {
		code, body := httpGet(ctx, base+"/readyz")
		return code == http.StatusOK, body
	})
	return base
}

// httpGet returns a URL's status code and body (code 0 when it does not answer).
func httpGet(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func simulatorKubelet(c kubernetes.Interface) simulator.Kubelet { return simulator.Kubelet{Client: c} }
