package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopTimeout = 10 * time.Second

// Process is one child process of a stack (a kubelet, a driver, an attacher, adc), run from
// its binary with flags, its output appended to a log file in the stack's folder. It can be
// stopped, killed and started again with the same flags, as a crash or a restart does.
type Process struct {
	// Name says which part this is in errors and logs, e.g. "kubelet e2e-node-1".
	Name string
	// diesOnSIGTERM marks a program without a SIGTERM handler (csi-attacher): ending by the
	// signal is its normal stop.
	diesOnSIGTERM bool
	// anyExitOnSIGTERM marks a program whose every exit after SIGTERM is its normal stop:
	// kube-scheduler without leader election exits 1 ("finished without leader elect"),
	// kube-controller-manager without it dies by the signal.
	anyExitOnSIGTERM bool

	bin     string
	logPath string

	mu   sync.Mutex
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	pids []int
}

func newProcess(name, bin, logPath string, args ...string) *Process {
	return &Process{Name: name, bin: bin, logPath: logPath, args: args}
}

// Args returns the flags the process runs with.
func (p *Process) Args() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.args...)
}

// SetArgs changes the flags of the next Start.
func (p *Process) SetArgs(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = args
}

// Start starts the process; it fails when it is already running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.exitedLocked() {
		return fmt.Errorf("starting %s: already running as pid %d", p.Name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting %s: opening its log %s: %w", p.Name, p.logPath, err)
	}
	fmt.Fprintf(out, "=== %s: %s %q\n", time.Now().Format(time.RFC3339Nano), p.bin, p.args)
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a ^C to the test reaches it only through the harness, and
	// killed with the test process should that die without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("starting %s (%s): %w", p.Name, p.bin, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	p.pids = append(p.pids, cmd.Process.Pid)
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *Process) exitedLocked() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running says whether the process is started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.exitedLocked()
}

// Pid returns the pid of the current (or last) run, 0 before the first Start.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// ExitError returns how the last run ended (nil for exit code 0 or while it runs).
func (p *Process) ExitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM and waits for the exit, sending SIGKILL after 10 s. A process that is
// not running is left alone. It returns the exit error of a process that did not exit 0 on
// SIGTERM.
func (p *Process) Stop() error {
	return p.signal(syscall.SIGTERM, stopTimeout)
}

// Kill sends SIGKILL, as a crash or an OOM kill does, and waits for the exit.
func (p *Process) Kill() error {
	err := p.signal(syscall.SIGKILL, stopTimeout)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed, as asked
	}
	return err
}

func (p *Process) signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending %s to %s (pid %d): %w", sig, p.Name, cmd.Process.Pid, err)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s (pid %d) did not exit within %s of %s; killed", p.Name, cmd.Process.Pid, timeout, sig)
	}
	if err := p.ExitError(); err != nil && !(sig == syscall.SIGTERM && (p.anyExitOnSIGTERM || p.diesOnSIGTERM && killedBy(err, syscall.SIGTERM))) {
		return fmt.Errorf("%s (pid %d) exited after %s: %w", p.Name, cmd.Process.Pid, sig, err)
	}
	return nil
}

// killedBy says whether err is the exit of a process ended by sig.
func killedBy(err error, sig syscall.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// Log returns everything the process wrote so far, over all its runs.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// startedPids returns the pids of every run, for the leftovers check.
func (p *Process) startedPids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.pids...)
}
