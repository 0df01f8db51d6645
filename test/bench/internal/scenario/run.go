package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/bench/internal/auditcount"
	"github.com/migration-aware/adc/test/bench/internal/procstat"
	"github.com/migration-aware/adc/test/simulator"
)

// Run runs one scenario end to end: seed (or reuse the seed), start a control plane on a
// copy of it with the audit log on, start the controller, wait until every volume is listed
// in its node's status, count a steady-state window, delete every pod, wait until every
// VolumeAttachment is gone, stop the controller and read its requests from the audit log.
func Run(ctx context.Context, c Config) (*Result, error) {
	c = c.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	env, err := startEnv(ctx, c)
	if err != nil {
		return nil, err
	}
	defer env.stop()
	seeding, runDir, admin, user, kubeconfig, auditLog := env.seeding, env.runDir, env.admin, env.user, env.kubeconfig, env.auditLog
	total := c.Volumes()
	w := newWatcher(total)
	w.start(ctx, admin)
	att := &simulator.ExternalAttacher{Client: admin, Workers: c.AttacherWorkers}
	if err := att.Run(ctx); err != nil {
		return nil, err
	}

	res := &Result{Scenario: c.Name(), Controller: c.Controller, Nodes: c.Nodes, PodsPerNode: c.PodsPerNode,
		Volumes: total, QPS: c.QPS, Burst: c.Burst, Seeding: seeding,
		APIBudget: time.Duration(float64(total+c.Nodes) / c.QPS * float64(time.Second))}

	// Start the controller.
	logDir := c.LogDir
	if logDir == "" {
		logDir = runDir
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the log folder %s: %w", logDir, err)
	}
	res.Log = filepath.Join(logDir, sanitize(fmt.Sprintf("%s-%s-%s.log", c.Controller, c.Name(), time.Now().Format("150405"))))
	var proc *process
	res.LoadStart = loadAverage()
	start := time.Now()
	if c.Controller == ADCInProcess {
		cfg := user.Config()
		if err := c.StartInProcess(ctx, cfg); err != nil {
			return nil, fmt.Errorf("starting adc in-process: %w", err)
		}
		res.Log = ""
	} else {
		if proc, err = startProcess(c, kubeconfig, res.Log); err != nil {
			return nil, err
		}
		defer proc.stop()
		res.ProcessMeasured = true
	}
	fmt.Fprintf(c.Progress, "started %s (%s)\n", c.Controller, c.Name())
	profileDone := make(chan error, 2)
	profile := func(path string, delay time.Duration, page string) {
		if path == "" || proc == nil || proc.secureAddr == "" {
			profileDone <- nil
			return
		}
		go func() {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			profileDone <- fetchProfile(ctx, proc.secureAddr, proc.kubeconfig, page, path)
		}()
	}
	profile(c.CPUProfile, c.CPUProfileDelay, fmt.Sprintf("profile?seconds=%d", c.CPUProfileSeconds))
	profile(c.HeapProfile, c.HeapProfileDelay, "heap")

	// Attach phase.
	if err := waitFor(ctx, c, start, proc, func(created, listed, _ int) bool { return created >= total && listed >= total },
		func(created, listed, _ int) string {
			return fmt.Sprintf("%d/%d VolumeAttachments, %d/%d listed in node status", created, total, listed, total)
		}, w); err != nil {
		return nil, fmt.Errorf("%s on %s: attach phase: %w", c.Controller, c.Name(), err)
	}
	converged := time.Now()
	res.LoadConverged = loadAverage()
	w.attachResult(res, start)
	var atConverge procstat.Sample
	if proc != nil {
		if atConverge, err = procstat.Read(proc.pid()); err != nil {
			return nil, err
		}
		res.MaxRSSAttach, res.CPUAttach = atConverge.MaxRSS, atConverge.CPU
	}
	fmt.Fprintf(c.Progress, "  converged after %.2fs; counting requests for %s\n", converged.Sub(start).Seconds(), c.SteadyWindow)
	time.Sleep(c.SteadyWindow) // a measurement window, not a synchronisation

	// Detach phase: every pod goes at once, a node's pods in one request, many nodes in
	// parallel (envtest runs no kubelet, so nothing reports the volumes in use).
	fmt.Fprintf(c.Progress, "deleting every pod ...\n")
	detachStart := time.Now()
	deleted := make(chan error, 1)
	go func() { deleted <- deletePods(ctx, admin, c) }()
	if err := waitFor(ctx, c, detachStart, proc, func(_, _, gone int) bool { return gone >= total },
		func(_, _, gone int) string { return fmt.Sprintf("%d/%d VolumeAttachments gone", gone, total) }, w); err != nil {
		return nil, fmt.Errorf("%s on %s: detach phase: %w", c.Controller, c.Name(), err)
	}
	if err := <-deleted; err != nil {
		return nil, err
	}
	detached := time.Now()
	res.AllDetached = detached.Sub(detachStart)
	if proc != nil {
		end, err := procstat.Read(proc.pid())
		if err != nil {
			return nil, err
		}
		res.MaxRSS, res.CPUDetach = end.MaxRSS, end.CPU-atConverge.CPU
	}
	for range 2 {
		if err := <-profileDone; err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
	}

	// Stop the controller so that the API server audits its watches as complete, then count.
	cancel()
	if proc != nil {
		stopping := time.Now()
		proc.stop()
		res.LogErrors = countLogErrors(res.Log, stopping)
	}
	waitStable(auditLog, 10*time.Second)
	reqs, err := auditlog.Read(auditLog)
	if err != nil {
		return nil, err
	}
	res.Attach = auditcount.Tally(reqs, start, converged)
	res.Steady = auditcount.Tally(reqs, converged, detachStart)
	res.Detach = auditcount.Tally(reqs, detachStart, detached)
	whole := auditcount.Tally(reqs, start, time.Now().Add(time.Hour))
	res.Errors, res.ErrorsByRequest = whole.Errors, whole.ErrorsByRequest
	return res, nil
}

// warmUp waits until the API server serves the seeded objects from its watch cache, so
// the controller's start does not pay for the server's own start.
func warmUp(ctx context.Context, client kubernetes.Interface) error {
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 1}
	if _, err := client.CoreV1().Pods("").List(ctx, opts); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	if _, err := client.CoreV1().PersistentVolumes().List(ctx, opts); err != nil {
		return fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, opts); err != nil {
		return fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	if _, err := client.CoreV1().Nodes().List(ctx, opts); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	return nil
}

// waitFor waits until done says so, printing progress every 5 s, failing after the phase
// timeout or when the controller process exits.
func waitFor(ctx context.Context, c Config, start time.Time, proc *process, done func(created, listed, gone int) bool,
	progress func(created, listed, gone int) string, w *watcher) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	timeout := time.NewTimer(c.Timeout)
	defer timeout.Stop()
	for {
		created, listed, gone, changed := w.counts()
		if done(created, listed, gone) {
			return nil
		}
		if proc != nil {
			if err := proc.running(); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-tick.C:
			fmt.Fprintf(c.Progress, "  %6.1fs: %s\n", time.Since(start).Seconds(), progress(created, listed, gone))
		case <-timeout.C:
			return fmt.Errorf("not done within %s: %s", c.Timeout, progress(created, listed, gone))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deletePods deletes every pod, one DeleteCollection per node, many nodes at once.
func deletePods(ctx context.Context, client kubernetes.Interface, c Config) error {
	zero := int64(0)
	p := newPool(ctx, c.SeedWorkers)
	for n := 0; n < c.Nodes; n++ {
		node := nodeName(n)
		p.do(func() error {
			err := client.CoreV1().Pods(Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
				metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
			if err != nil {
				return fmt.Errorf("deleting the pods of node %s: %w", node, err)
			}
			return nil
		})
	}
	return p.wait()
}

// sanitize makes a scenario name usable in a file name.
func sanitize(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch == '/' || ch == '@' {
			b[i] = '_'
		}
	}
	return string(b)
}

// loadAverage is the machine's 1-minute load average (/proc/loadavg), 0 if unreadable.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	if _, err := fmt.Sscan(string(data), &l); err != nil {
		return 0
	}
	return l
}
