package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// `adc controller --kubeconfig` attaches a volume on the test control plane and exits 0 on
// SIGTERM. Its secure port, on by default, serves the health checks to anyone and nothing
// else without credentials; the kubeconfig's user (the admin, by client certificate) reads
// /metrics.
func TestControllerCommandAttachesAndExitsCleanly(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	client := cp.Client

	securePort, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	out := &framework.Output{}
	cmd := exec.Command(adcBinary, "controller", "--kubeconfig", cp.KubeconfigPath, "--workers", "2",
		"--kube-api-qps", "50", "--kube-api-burst", "100", "--max-wait-for-unmount", "1m", "-v", "2",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(securePort),
		"--leader-elect-namespace", "default", "--logging-format", "json")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting adc controller: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("adc controller output:\n%s", out.String())
		}
	})

	kubelet := simulator.Kubelet{Client: client}
	node := "cli-node"
	if _, err := kubelet.RegisterNode(ctx, node, true); err != nil {
		t.Fatal(err)
	}
	sim := &simulator.ExternalAttacher{Client: client}
	if err := sim.Run(ctx); err != nil {
		t.Fatal(err)
	}
	createBoundCSIPod(t, "cli-app", node, "cli.csi.example.com", "cli-handle")

	sum := sha256.Sum256([]byte("cli-handle" + "cli.csi.example.com" + node))
	vaName := "csi-" + hex.EncodeToString(sum[:])
	unique := "kubernetes.io/csi/cli.csi.example.com^cli-handle"
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, av := range n.Status.VolumesAttached {
			if string(av.Name) == unique {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("volume not listed in node status by the adc binary: %v", err)
	}
	if _, err := client.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{}); err != nil {
		t.Fatalf("VolumeAttachment %s: %v", vaName, err)
	}

	base := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort))
	insecure := framework.InsecureTLSClient(t)
	admin := framework.ClientWithCertificate(t, cp.Config)
	framework.Eventually(ctx, t, "the admin reads /metrics on the secure port", 20*time.Second, func(ctx context.Context) (bool, string) {
		code, body := framework.GetWithToken(ctx, admin, base+"/metrics", "")
		return code == http.StatusOK, fmt.Sprintf("%d %.200s", code, body)
	})
	for path, want := range map[string]int{
		"/healthz": http.StatusOK, "/readyz": http.StatusOK, "/livez": http.StatusOK,
		"/metrics": http.StatusUnauthorized, "/dashboard/": http.StatusUnauthorized, "/debug/pprof/": http.StatusUnauthorized, "/": http.StatusUnauthorized,
	} {
		if code, body := framework.GetWithToken(ctx, insecure, base+path, ""); code != want {
			t.Errorf("anonymous GET %s = %d, want %d: %.200s", path, code, want, body)
		}
	}
	// Profiling is off unless asked: even the admin finds no profiles.
	if code, _ := framework.GetWithToken(ctx, admin, base+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("admin GET /debug/pprof/ without --profiling = %d, want 404", code)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("adc controller exited with %v after SIGTERM, want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("adc controller did not exit within 15s of SIGTERM")
	}
	if !strings.Contains(out.String(), `"msg":"Created VolumeAttachment"`) {
		t.Errorf("the -v 2 JSON log does not mention the attach:\n%s", out.String())
	}
}

// Bad flags fail fast with an error naming the flag.
func TestControllerCommandRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown plugin", []string{"--migration", "kubernetes.io/floppy=on"}, "--migration"},
		{"unknown node source", []string{"--node-migration-source", "gossip"}, "--node-migration-source"},
		{"zero workers", []string{"--workers", "0"}, "--workers"},
		{"negative max wait", []string{"--max-wait-for-unmount", "-1s"}, "--max-wait-for-unmount"},
		{"negative creates in flight", []string{"--creates-in-flight", "-1"}, "--creates-in-flight"},
		{"plain HTTP on every interface", []string{"--http-addr", ":8080"}, "--http-addr"},
		{"plain HTTP on a pod address", []string{"--http-addr", "10.0.0.7:8080"}, "not a loopback address"},
		{"secure port out of range", []string{"--secure-port", "70000"}, "--secure-port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(adcBinary, append([]string{"controller", "--kubeconfig", framework.Get(t).KubeconfigPath}, tc.args...)...).CombinedOutput()
			if err == nil {
				t.Fatalf("adc controller %v succeeded, want an error", tc.args)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("error output does not name %s:\n%s", tc.want, out)
			}
		})
	}
}

// createBoundCSIPod creates a CSI PV, a claim bound to it and a pod using it on node, in the
// default namespace.
func createBoundCSIPod(t *testing.T, name, node, driver, handle string) {
	t.Helper()
	ctx := t.Context()
	client := framework.Get(t).Client
	ns := "default"
	if _, err := simulator.BindNewClaim(ctx, client, ns, name, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
