// Command cluster is `make bench-cluster`: pod startup with volumes, the figure users know,
// on a whole cluster on this machine (test/e2e/cluster) in the three modes side by side, in
// one invocation: for each mode a cluster of -nodes hollow kubelets at the components'
// default clocks, -pods pods each with a claim of its own on a pre-created PV (bound by the PV
// controller, placed by the scheduler, attached by the mode's attach/detach controller,
// mounted by the kubelet), created at -rate pods per second; it reports pod created -> Running
// p50/p90/p99 observed by watch, then deletes the pods at the same rate and reports pod
// deleted -> volume detached (its VolumeAttachment gone). The machine's load is sampled
// before and during the run. See docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/migration-aware/adc/test/e2e/cluster"
)

func main() {
	var o config
	var modes string
	flag.IntVar(&o.nodes, "nodes", 30, "hollow nodes per mode's cluster")
	flag.IntVar(&o.pods, "pods", 150, "pods per mode, one volume each")
	flag.Float64Var(&o.rate, "rate", 10, "pods created (and later deleted) per second, per mode")
	flag.StringVar(&modes, "modes", "kcm-adc,stock,standalone", "modes, run side by side")
	flag.StringVar(&o.adc, "adc", "bin/adc", "the adc binary, for the standalone mode (make build)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up on a phase after this long")
	flag.DurationVar(&o.statusFrequency, "kubelet-status-frequency", 10*time.Second, "the kubelets' node status period (the kubelet's default 10 s; it reports volumesInUse only that often)")
	flag.Parse()
	for _, s := range strings.Split(modes, ",") {
		m, err := cluster.ParseMode(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-cluster:", err)
			os.Exit(2)
		}
		o.modes = append(o.modes, m)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cluster:", err)
		os.Exit(1)
	}
}
