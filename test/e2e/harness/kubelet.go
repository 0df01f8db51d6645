package harness

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Kubelet is the real kubelet of one node (bin/e2e/hollowkubelet): no containers, a fake
// mounter, its own root dir and port. Its root dir outlives a Stop, as /var/lib/kubelet does
// on a real node, so the drivers' sockets in it survive a kubelet restart.
type Kubelet struct {
	// Name is the node name.
	Name string
	// RootDir is the kubelet's root dir (pods, plugins, plugins_registry).
	RootDir string
	// Port is its kubelet API port on 127.0.0.1.
	Port int

	proc  *Process
	stack *Stack
}

func newKubelet(s *Stack, name, rootDir string, port int) *Kubelet {
	k := &Kubelet{Name: name, RootDir: rootDir, Port: port, stack: s}
	args := []string{"--kubeconfig", s.kubeconfig, "--node-name", name, "--root-dir", rootDir,
		"--port", strconv.Itoa(port),
		"--node-status-update-frequency", s.opts.NodeStatusUpdateFrequency.String(),
		"--v", "2"}
	if s.opts.NodeLeaseDuration > 0 {
		args = append(args, "--node-lease-duration", s.opts.NodeLeaseDuration.String())
	}
	if labels := s.opts.NodeLabels[name]; len(labels) > 0 {
		args = append(args, "--node-labels", joinPairs(labels, "="))
	}
	k.proc = newProcess("kubelet "+name, s.bin(kubeletBinary), s.logPath("kubelet-"+name), args...)
	s.track(k.proc, port)
	return k
}

// Process returns the kubelet's process, for its log, pid and exit.
func (k *Kubelet) Process() *Process { return k.proc }

// Start starts the kubelet (again); WaitRegistered waits until it is usable.
func (k *Kubelet) Start() error { return k.proc.Start() }

// Stop stops the kubelet with SIGTERM, as systemd stops one; the node and its pods stay.
func (k *Kubelet) Stop() error { return k.proc.Stop() }

// Kill kills the kubelet with SIGKILL, as a crash does.
func (k *Kubelet) Kill() error { return k.proc.Kill() }

// WaitRegistered waits until the kubelet's Node is Ready with a heartbeat newer than since
// and its CSINode lists every driver of the stack (the kubelet registered them through
// plugins_registry).
func (k *Kubelet) WaitRegistered(ctx context.Context, since time.Time, timeout time.Duration) error {
	client := k.stack.Client
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			last = fmt.Sprintf("node: %v", err)
			return false, nil
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
				ready = true
			}
		}
		if !ready {
			last = "node not Ready with a fresh heartbeat"
			return false, nil
		}
		csiNode, err := client.StorageV1().CSINodes().Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			last = fmt.Sprintf("CSINode: %v", err)
			return false, nil
		}
		have := map[string]bool{}
		for _, d := range csiNode.Spec.Drivers {
			have[d.Name] = true
		}
		for _, d := range k.stack.opts.Drivers {
			if !have[d.Name] {
				last = fmt.Sprintf("CSINode lists %d drivers, not yet %s", len(csiNode.Spec.Drivers), d.Name)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kubelet of node %s not registered within %s (last: %s): %w\n%s", k.Name, timeout, last, err, tail(k.proc.Log(), 30))
	}
	return nil
}

// joinPairs returns m as sorted key<sep>value pairs joined by commas.
func joinPairs(m map[string]string, sep string) string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+sep+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
