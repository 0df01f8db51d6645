package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/test/integration/framework"
)

// leaseName is the Lease the adc replicas of the chaos test elect their leader on.
const leaseName = "adc-chaos"

// replicas runs adc as a 2-replica Deployment would: each replica is restarted when it exits
// (a lost lease makes the leader exit on purpose) or is killed, until Stop.
type replicas struct {
	args   []string
	client kubernetes.Interface

	mu    sync.Mutex
	procs []*process // every process started, in order, for the logs
	live  map[int]*process
	kills int
	wg    sync.WaitGroup
}

// process is one run of one replica.
type process struct {
	slot int
	gen  int
	cmd  *exec.Cmd
	out  *framework.Output
	done chan struct{}
}

func newReplicas(client kubernetes.Interface, kubeconfig string, maxWait time.Duration) *replicas {
	// Long enough for the leader to keep leading through a short kube-apiserver restart (about
	// 7 s here), as a production leader with its 15 s lease does: it then decides on the
	// caches it had, the case the restart fault is about. A killed leader is replaced within it.
	const lease = 12 * time.Second
	return &replicas{
		client: client,
		live:   map[int]*process{},
		// No secure port: the replicas would share its port, and the chaos test reads nothing
		// from adc over HTTP (test/integration/deploy covers the secure port).
		args: []string{"controller", "--kubeconfig", kubeconfig, "--http-addr", "127.0.0.1:0", "--secure-port", "0",
			"--leader-elect-namespace", "default", "--leader-elect-lease-name", leaseName,
			"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", (lease * 5 / 6).String(),
			"--leader-elect-retry-period", (lease / 12).String(),
			"--max-wait-for-unmount", maxWait.String(), "--workers", "4",
			"--kube-api-qps", "100", "--kube-api-burst", "200", "-v", "2"},
	}
}

// Start runs n replicas until ctx ends.
func (r *replicas) Start(ctx context.Context, n int) {
	for slot := 0; slot < n; slot++ {
		r.wg.Add(1)
		go r.supervise(ctx, slot)
	}
}

// supervise keeps one replica slot running, restarting its process half a second after it
// ends, as a kubelet restarts a container.
func (r *replicas) supervise(ctx context.Context, slot int) {
	defer r.wg.Done()
	for gen := 0; ctx.Err() == nil; gen++ {
		p := &process{slot: slot, gen: gen, out: &framework.Output{}, done: make(chan struct{})}
		p.cmd = exec.Command(adcBinary, r.args...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			fmt.Fprintf(p.out, "starting adc: %v\n", err)
			return
		}
		r.mu.Lock()
		r.procs = append(r.procs, p)
		r.live[slot] = p
		r.mu.Unlock()
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		select {
		case <-p.done:
		case <-ctx.Done():
			_ = p.cmd.Process.Kill()
			<-p.done
			return
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// Wait waits for every replica to be gone after ctx ended.
func (r *replicas) Wait() { r.wg.Wait() }

// leader returns the live process holding the lease, if any.
func (r *replicas) leader(ctx context.Context) (*process, error) {
	l, err := r.client.CoordinationV1().Leases("default").Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading lease %s: %w", leaseName, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return nil, nil
	}
	// The holder logged `identity="<it>"` when it became the leader; a standby names it too,
	// as `leader="<it>"`, so the bare identity would find a standby as often as the leader.
	mark := `identity="` + *l.Spec.HolderIdentity + `"`
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.live {
		if strings.Contains(p.out.String(), mark) {
			return p, nil
		}
	}
	return nil, nil
}

// WaitForLeader waits until a live replica leads.
func (r *replicas) WaitForLeader(ctx context.Context, timeout time.Duration) (*process, error) {
	return r.waitLeader(ctx, timeout, "", "")
}

// WaitForWarmLeader waits until a live replica leads with its caches synced, so that a fault
// that follows hits a controller deciding on caches it already had.
func (r *replicas) WaitForWarmLeader(ctx context.Context, timeout time.Duration) (*process, error) {
	return r.waitLeader(ctx, timeout, "Caches synced; reconciling every node", " with synced caches")
}

// waitLeader waits until a live replica leads and its log has logged (if set).
func (r *replicas) waitLeader(ctx context.Context, timeout time.Duration, logged, what string) (*process, error) {
	var p *process
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		p, err = r.leader(ctx)
		return err == nil && p != nil && strings.Contains(p.out.String(), logged), nil
	})
	if err != nil {
		return nil, fmt.Errorf("no adc replica leads%s within %s: %w", what, timeout, err)
	}
	return p, nil
}

// KillLeader SIGKILLs the leading replica, which cannot release its lease; its slot
// restarts it as a standby.
func (r *replicas) KillLeader(ctx context.Context) (string, error) {
	p, err := r.WaitForLeader(ctx, 15*time.Second)
	if err != nil {
		return "", err
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return "", fmt.Errorf("killing replica %d/%d: %w", p.slot, p.gen, err)
	}
	r.mu.Lock()
	r.kills++
	r.mu.Unlock()
	return fmt.Sprintf("replica %d generation %d", p.slot, p.gen), nil
}

// Stats says how many processes ran and how many were killed.
func (r *replicas) Stats() (started, killed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.procs), r.kills
}

// LogLinesAbout returns up to max lines of every replica's log that mention one of words,
// prefixed with the replica, for explaining a violation.
func (r *replicas) LogLinesAbout(words []string, max int) []string {
	r.mu.Lock()
	procs := append([]*process(nil), r.procs...)
	r.mu.Unlock()
	var out []string
	for _, p := range procs {
		for _, line := range strings.Split(p.out.String(), "\n") {
			for _, w := range words {
				if w != "" && strings.Contains(line, w) {
					out = append(out, fmt.Sprintf("[adc %d/%d] %s", p.slot, p.gen, line))
					break
				}
			}
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// LogTail returns the last n lines of every process's log, for a failure without a better
// clue.
func (r *replicas) LogTail(t *testing.T, n int) {
	r.mu.Lock()
	procs := append([]*process(nil), r.procs...)
	r.mu.Unlock()
	for _, p := range procs {
		lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		t.Logf("adc replica %d generation %d, last %d lines:\n%s", p.slot, p.gen, len(lines), strings.Join(lines, "\n"))
	}
}

// SaveLogs writes every process's whole log into dir (CHAOS_LOG_DIR), one file per replica
// generation, for reading a run after it ended.
func (r *replicas) SaveLogs(t *testing.T, dir string) {
	r.mu.Lock()
	procs := append([]*process(nil), r.procs...)
	r.mu.Unlock()
	for _, p := range procs {
		name := filepath.Join(dir, fmt.Sprintf("adc-%d-%d.log", p.slot, p.gen))
		if err := os.WriteFile(name, []byte(p.out.String()), 0o644); err != nil {
			t.Logf("saving %s: %v", name, err)
		}
	}
	t.Logf("adc logs saved in %s", dir)
}

// LeaderHTTPAddr returns the plain HTTP address the leading replica logged, "" if none leads
// or it logged none.
func (r *replicas) LeaderHTTPAddr(ctx context.Context) string {
	p, err := r.leader(ctx)
	if err != nil || p == nil {
		return ""
	}
	const key = `"Serving plain HTTP on loopback"`
	for _, line := range strings.Split(p.out.String(), "\n") {
		if !strings.Contains(line, key) {
			continue
		}
		if _, addr, ok := strings.Cut(line, `address="`); ok {
			if addr, _, ok := strings.Cut(addr, `"`); ok {
				return addr
			}
		}
	}
	return ""
}

// startLeading starts two adc replicas that reach the API server through cfg (directly, or
// through the fault proxy), with --max-wait-for-unmount maxWait, and waits until one leads.
// stop ends them and waits for their exit.
func startLeading(ctx context.Context, t *testing.T, client kubernetes.Interface, cfg *rest.Config) (reps *replicas, stop func()) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "adc-kubeconfig")
	if err := framework.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	adcCtx, stopADC := context.WithCancel(ctx)
	reps = newReplicas(client, kubeconfig, maxWait)
	reps.Start(adcCtx, 2)
	stop = func() { stopADC(); reps.Wait() }
	if _, err := reps.WaitForLeader(ctx, 30*time.Second); err != nil {
		reps.LogTail(t, 40)
		stop()
		t.Fatal(err)
	}
	return reps, stop
}
