package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// report prints the modes side by side, one measure per line.
func report(out io.Writer, o config, runs []*modeRun) {
	fmt.Fprintf(out, "\npod startup with volumes: %d nodes, %d pods with one volume each, %g pods/s, per mode\n", o.nodes, o.pods, o.rate)
	fmt.Fprintf(out, "%-40s", "")
	for _, r := range runs {
		fmt.Fprintf(out, " %16s", r.mode)
	}
	fmt.Fprintln(out)
	row := func(name string, f func(result) string) {
		fmt.Fprintf(out, "%-40s", name)
		for _, r := range runs {
			fmt.Fprintf(out, " %16s", f(r.res))
		}
		fmt.Fprintln(out)
	}
	row("pods Running", func(r result) string { return fmt.Sprintf("%d/%d", r.running, o.pods) })
	for _, q := range []float64{50, 90, 99} {
		row(fmt.Sprintf("created -> Running p%.0f", q), func(r result) string { return dur(pct(r.startup, q)) })
	}
	row("created -> Running max", func(r result) string { return dur(pct(r.startup, 100)) })
	row("first created -> last Running", func(r result) string { return dur(r.allRunning) })
	row("volumes detached", func(r result) string { return fmt.Sprintf("%d/%d", r.detached, o.pods) })
	for _, q := range []float64{50, 90, 99} {
		row(fmt.Sprintf("deleted -> detached p%.0f", q), func(r result) string { return dur(pct(r.detach, q)) })
	}
	row("deleted -> detached max", func(r result) string { return dur(pct(r.detach, 100)) })
	row("first deleted -> last detached", func(r result) string { return dur(r.allDetached) })
	row("kube-controller-manager (+adc) CPU", func(r result) string { return fmt.Sprintf("%.1f s", r.controllerCPU.Seconds()) })
	for _, r := range runs {
		if r.err != nil {
			fmt.Fprintf(out, "%s: %v\n", r.mode, r.err)
		}
	}
	fmt.Fprintln(out, "anchors: SIG-scalability pod startup SLO p99 <= 5 s for pods without volumes (none defined with volumes);")
	fmt.Fprintln(out, "upstream's storage pod-startup experiment, 100 pods with one PV each on one node: p50 285 s, p99 500 s")
}

// pct is the q-th percentile by nearest rank (q=100: the maximum), 0 for no samples.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func dur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
