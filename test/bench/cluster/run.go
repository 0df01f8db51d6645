package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/migration-aware/adc/test/bench/internal/procstat"
	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// config is what the command line sets.
type config struct {
	modes           []cluster.Mode
	nodes, pods     int
	rate            float64
	adc             string
	timeout         time.Duration
	statusFrequency time.Duration
}

// idleSample is how long the clusters' cost at rest is sampled before the workload.
const idleSample = 15 * time.Second

// modeRun is one mode's cluster and what it measured.
type modeRun struct {
	mode  cluster.Mode
	stack *cluster.Cluster
	rec   *cluster.Recorder
	res   result
	err   error
	// cpu0 is the CPU time of the mode's attach/detach processes before the workload.
	cpu0 time.Duration
}

// run starts one cluster per mode, side by side, runs the workload on all of them at once,
// reports, and stops everything, checking that nothing is left behind.
func run(ctx context.Context, o config, out io.Writer) (err error) {
	assets, err := cluster.FindAssets()
	if err != nil {
		return err
	}
	adc, err := filepath.Abs(o.adc)
	if err != nil {
		return err
	}
	idle := readMachine()
	fmt.Fprintf(out, "bench-cluster: %d modes side by side, each %d hollow nodes and %d pods with one volume each, created then deleted at %g/s\n",
		len(o.modes), o.nodes, o.pods, o.rate)
	fmt.Fprintf(out, "machine: %s; before starting: %s\n", idle.describeMachine(), idle.describeLoad())

	// One cluster after another: a hundred kubelets and three control planes starting at once
	// on two cores miss their registration deadlines; the measure starts once all are up.
	runs := make([]*modeRun, len(o.modes))
	for i, m := range o.modes {
		r := &modeRun{mode: m}
		runs[i] = r
		if ctx.Err() != nil {
			r.err = ctx.Err()
			continue
		}
		r.stack, r.err = cluster.Start(ctx, options(o, m, assets, adc))
		if r.err == nil {
			r.rec, r.err = cluster.Record(ctx, r.stack.Client)
		}
	}
	var wg sync.WaitGroup
	defer func() {
		var stopWG sync.WaitGroup
		var mu sync.Mutex
		for _, r := range runs {
			if r.stack == nil {
				continue
			}
			stopWG.Add(1)
			go func() {
				defer stopWG.Done()
				stopErr := r.stack.Stop()
				mu.Lock()
				defer mu.Unlock()
				err = errors.Join(err, stopErr)
				if left := r.stack.Leftovers(); len(left) > 0 {
					err = errors.Join(err, fmt.Errorf("%s left behind: %s", r.mode, strings.Join(left, "; ")))
				}
			}()
		}
		stopWG.Wait()
		if err == nil {
			fmt.Fprintln(out, "stopped every cluster; nothing left behind (processes, folders, ports, mounts, iptables checked)")
		}
	}()
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("starting the %s cluster: %w", r.mode, r.err)
		}
		r.cpu0 = controllerCPU(r.stack.Stack)
	}
	// The clusters' own cost at rest: kubelets' status and lease updates, controllers' resyncs.
	idle0 := readMachine()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idleSample):
	}
	idle1 := readMachine()
	fmt.Fprintf(out, "clusters up and idle for %s: machine CPU busy %.0f%% of %d cores, %s\n", idleSample, busy(idle0, idle1)*100, idle1.cores, idle1.describeLoad())

	before := readMachine()
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.res, r.err = workload(ctx, r.stack.Stack, r.rec, o, func(format string, args ...any) {
				fmt.Fprintf(out, "%s %s: "+format+"\n", append([]any{time.Now().Format("15:04:05"), r.mode}, args...)...)
			})
			r.res.controllerCPU = controllerCPU(r.stack.Stack) - r.cpu0
		}()
	}
	wg.Wait()
	during := readMachine()
	fmt.Fprintf(out, "during the workload: %s; machine CPU busy %.0f%% of %d cores\n", during.describeLoad(), busy(before, during)*100, during.cores)
	report(out, o, runs)
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("mode %s: %w", r.mode, r.err)
		}
	}
	return nil
}

// options are a mode's cluster: o.nodes nodes, the mock driver, the components' own clocks.
func options(o config, m cluster.Mode, assets cluster.Assets, adc string) cluster.Options {
	t := cluster.UpstreamTimings
	co := cluster.Options{Mode: m, Assets: assets, ADCBinary: adc, Timings: &t, KubeletStatusFrequency: o.statusFrequency,
		Drivers: []harness.DriverOptions{{Name: harness.DefaultDriver}}}
	for i := range o.nodes {
		co.Nodes = append(co.Nodes, fmt.Sprintf("node-%d", i+1))
	}
	return co
}

// controllerCPU is the CPU time so far of the processes that attach and detach in the stack:
// kube-controller-manager (every controller, attach/detach included) and adc when it runs
// as a process.
func controllerCPU(s *harness.Stack) time.Duration {
	var total time.Duration
	for _, p := range []*harness.Process{s.ControllerManager(), s.ADC()} {
		if p == nil || !p.Running() {
			continue
		}
		if st, err := procstat.Read(p.Pid()); err == nil {
			total += st.CPU
		}
	}
	return total
}
