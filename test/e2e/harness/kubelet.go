package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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
		csiNode, err := client.StorageV1().CSINodes().Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			last = fmt.Sprintf("CSINode: %v", err)
			return false, nil
		}
		var ok bool
		ok, last = k.stack.registered(node, csiNode, since)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("kubelet of node %s not registered within %s (last: %s): %w\n%s", k.Name, timeout, last, err, tail(k.proc.Log(), 30))
	}
	return nil
}

// waitRegistered waits until every kubelet of ks is registered as WaitRegistered says, with
// two lists per poll however many there are (a hundred kubelets' Gets every 50 ms would spend
// any client's budget).
func (s *Stack) waitRegistered(ctx context.Context, ks []*Kubelet, since time.Time, timeout time.Duration) error {
	var last string
	var pending []*Kubelet
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = fmt.Sprintf("listing nodes: %v", err)
			return false, nil
		}
		csiNodes, err := s.Client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = fmt.Sprintf("listing CSINodes: %v", err)
			return false, nil
		}
		byName := map[string]*v1.Node{}
		for i := range nodes.Items {
			byName[nodes.Items[i].Name] = &nodes.Items[i]
		}
		csiByName := map[string]*storagev1.CSINode{}
		for i := range csiNodes.Items {
			csiByName[csiNodes.Items[i].Name] = &csiNodes.Items[i]
		}
		pending = pending[:0]
		for _, k := range ks {
			switch n, c := byName[k.Name], csiByName[k.Name]; {
			case n == nil:
				last = "node " + k.Name + " not registered"
			case c == nil:
				last = "no CSINode " + k.Name + " yet"
			default:
				ok, why := s.registered(n, c, since)
				if ok {
					continue
				}
				last = k.Name + ": " + why
			}
			pending = append(pending, k)
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		msg := fmt.Sprintf("%d of %d kubelets not registered within %s (last: %s): %v", len(pending), len(ks), timeout, last, err)
		if len(pending) > 0 {
			msg += "\n" + tail(pending[0].proc.Log(), 30)
		}
		return errors.New(msg)
	}
	return nil
}

// waitNodes waits until the Node of every kubelet of ks exists.
func (s *Stack) waitNodes(ctx context.Context, ks []*Kubelet, timeout time.Duration) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		have := map[string]bool{}
		for _, n := range nodes.Items {
			have[n.Name] = true
		}
		missing = missing[:0]
		for _, k := range ks {
			if !have[k.Name] {
				if !k.proc.Running() {
					return false, fmt.Errorf("kubelet of node %s exited: %v\n%s", k.Name, k.proc.ExitError(), tail(k.proc.Log(), 30))
				}
				missing = append(missing, k.Name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes %v not registered within %s: %w", missing, timeout, err)
	}
	return nil
}

// csiNodeGrace is how long after their Nodes exist n kubelets starting together may take to
// create their CSINodes before waitCSINodes restarts those that have none: 10 s, and 100 ms
// more per kubelet (a hundred starting at once on two cores are slower, not stuck).
func csiNodeGrace(n int) time.Duration { return 10*time.Second + time.Duration(n)*100*time.Millisecond }

// waitCSINodes waits until every kubelet of ks has created its CSINode. A kubelet does so once
// it has read its own Node (the CSI plugin's InitializeCSINodeWithAnnotation), which is also
// how it learns the Node's UID, the owner reference of the CSINode a driver registration
// creates. It tries on a backoff that grows to 19 s and then 117 s: a kubelet whose Node was
// registered just after one of its tries (many kubelets starting at once on two cores) would
// create the CSINode for a driver started meanwhile with an owner reference without UID, which
// the API server refuses, and retry the registration with a backoff growing to 2 minutes. A
// kubelet without a CSINode csiNodeGrace after the Nodes exist is restarted: its Node exists
// now, so its first try succeeds.
func (s *Stack) waitCSINodes(ctx context.Context, ks []*Kubelet, timeout time.Duration) error {
	missing := func(ctx context.Context) ([]*Kubelet, error) {
		list, err := s.Client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		have := map[string]bool{}
		for _, n := range list.Items {
			have[n.Name] = true
		}
		var out []*Kubelet
		for _, k := range ks {
			if !have[k.Name] {
				out = append(out, k)
			}
		}
		return out, nil
	}
	var left []*Kubelet
	poll := func(d time.Duration) error {
		return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
			m, err := missing(ctx)
			if err != nil {
				return false, nil
			}
			left = m
			return len(m) == 0, nil
		})
	}
	grace := csiNodeGrace(len(ks))
	if poll(grace) == nil {
		return nil
	}
	for _, k := range left {
		s.logf("kubelet of node %s created no CSINode within %s of its Node (its CSI plugin's initialization backs off): restarting it", k.Name, grace)
		if err := k.Kill(); err != nil {
			return err
		}
		if err := k.Start(); err != nil {
			return err
		}
	}
	if err := poll(timeout); err != nil {
		var names []string
		for _, k := range left {
			names = append(names, k.Name)
		}
		return fmt.Errorf("no CSINode of nodes %v within %s of a restart of their kubelets: %w", names, timeout, err)
	}
	return nil
}

// registered says whether node is Ready with a heartbeat newer than since and csiNode lists
// every driver of the stack, and otherwise what is missing.
func (s *Stack) registered(node *v1.Node, csiNode *storagev1.CSINode, since time.Time) (bool, string) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
			ready = true
		}
	}
	if !ready {
		return false, "node not Ready with a fresh heartbeat"
	}
	have := map[string]bool{}
	for _, d := range csiNode.Spec.Drivers {
		have[d.Name] = true
	}
	for _, d := range s.opts.Drivers {
		if !have[d.Name] {
			return false, fmt.Sprintf("CSINode lists %d drivers, not yet %s", len(csiNode.Spec.Drivers), d.Name)
		}
	}
	return true, ""
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
