package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// hostPaths are where a kubelet, kube-controller-manager (its FlexVolume prober) or
// kube-scheduler and kube-controller-manager (their self-signed serving certificates, without
// --cert-dir) write on a host by default; the stack must create none of them.
var hostPaths = []string{"/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/usr/libexec/kubernetes", "/etc/kubernetes", "/run/containerd",
	"/var/run/kubernetes", "/run/kubernetes"}

// hostState is what the stack must not change on the host: its mounts, iptables rules and
// the kubelet's default folders.
type hostState struct {
	mounts   string
	iptables string
	paths    map[string]bool
}

func captureHost() hostState {
	h := hostState{paths: map[string]bool{}}
	for _, p := range hostPaths {
		if _, err := os.Stat(p); err == nil {
			h.paths[p] = true
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		h.mounts = normalizeMounts(string(b))
	}
	if path, err := exec.LookPath("iptables-save"); err == nil {
		if out, err := exec.Command(path).Output(); err == nil {
			h.iptables = dropComments(string(out))
		}
	}
	return h
}

// normalizeMounts keeps each mount's mount point and source, sorted out of the kernel's ids.
func normalizeMounts(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) > 4 {
			out = append(out, f[4])
		}
	}
	return strings.Join(out, "\n")
}

func dropComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ":") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Leftovers lists what a stopped stack left behind: a process it started (or any process
// naming its folder), its folder or the control plane's, a listening port it used, a socket
// or folder stock kubemark leaves in /tmp, a mount or an iptables rule added. Empty means
// clean. Call it after Stop.
func (s *Stack) Leftovers() []string {
	var found []string
	s.mu.Lock()
	procs := append([]*Process(nil), s.procs...)
	ports := append([]int(nil), s.ports...)
	dirs := append([]string{s.Dir}, s.envDirs...)
	s.mu.Unlock()

	for _, p := range procs {
		for _, pid := range p.startedPids() {
			if alive(pid) {
				found = append(found, fmt.Sprintf("process %s (pid %d) still running", p.Name, pid))
			}
		}
	}
	if s.Dir != "" {
		found = append(found, processesNaming(s.Dir)...)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err == nil {
			found = append(found, "folder "+d+" still exists")
		}
	}
	for _, port := range ports {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			found = append(found, fmt.Sprintf("port %d still accepts connections", port))
		}
	}
	found = append(found, s.tmpLeftovers()...)
	after := captureHost()
	if after.mounts != s.before.mounts {
		found = append(found, "the host's mounts changed")
	}
	if after.iptables != s.before.iptables {
		found = append(found, "the host's iptables rules changed")
	}
	for p := range after.paths {
		if !s.before.paths[p] {
			found = append(found, p+" created on the host")
		}
	}
	return found
}

// alive says whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// processesNaming lists live processes whose command line mentions dir.
func processesNaming(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), dir) || !alive(pid) {
			continue
		}
		found = append(found, fmt.Sprintf("process %d still running: %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return found
}

// tmpLeftovers lists what stock kubemark leaves in /tmp that appeared since the stack started
// and stays. Every hollow kubelet's start makes a hollow-kubelet.N folder there and removes it
// at once, including the kubelets of other stacks running side by side (the end-to-end suites
// do): what goes within a few seconds is theirs in passing, not left behind.
func (s *Stack) tmpLeftovers() []string {
	recent := func() []string {
		var out []string
		for _, pattern := range []string{"/tmp/hollow-kubelet.*", "/tmp/kubelet_remote_*.sock"} {
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				if fi, err := os.Stat(m); err == nil && !fi.ModTime().Before(s.started) {
					out = append(out, m)
				}
			}
		}
		return out
	}
	seen := recent()
	if len(seen) == 0 {
		return nil
	}
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
		var still []string
		for _, m := range seen {
			if _, err := os.Stat(m); err == nil {
				still = append(still, m)
			}
		}
		seen = still
		return len(seen) == 0, nil
	})
	var found []string
	for _, m := range seen {
		found = append(found, m+" created in /tmp")
	}
	return found
}
