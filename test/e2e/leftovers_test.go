package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// The hollow kubelet started on a root dir it creates removes that dir when it stops on
// SIGTERM, and exits 0. (The harness creates the root dirs itself, so that a kubelet restart
// keeps them as /var/lib/kubelet stays on a real node; this checks the kubelet's own clean-up.)
func TestKubeletRemovesTheRootDirItCreated(t *testing.T) {
	ctx := t.Context()
	s := shared
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	port, err := freeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	const node = "rootdir-check"
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(harness.AssetsDir(), "hollowkubelet"), "--kubeconfig", s.Kubeconfig(),
		"--node-name", node, "--root-dir", root, "--port", strconv.Itoa(port), "--node-status-update-frequency", "1s")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = s.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = s.Client.StorageV1().CSINodes().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	framework.Eventually(ctx, t, "node "+node+" registered", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := s.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = os.Stat(filepath.Join(root, "plugins_registry"))
		return err == nil, fmt.Sprintf("plugins_registry: %v", err)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("hollowkubelet exit on SIGTERM: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("root dir %s still there after SIGTERM (stat: %v)", root, err)
	}
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
