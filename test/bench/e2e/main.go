// Command e2e is adc's end-to-end attach benchmark, one run (`make bench-e2e`,
// `make bench-e2e-upstream`; `make bench-compare` and `make bench-scale` run test/bench/compare).
// It seeds a test control plane with N nodes x M pods, one CSI PersistentVolume each, runs
// one controller with a simulated external-attacher and reports: time until every
// VolumeAttachment exists and until every volume is listed in its node's status, p50/p90 of
// the time to be listed, VA attached -> listed p50/p99, the controller's peak RSS and CPU time
// (/proc), its API requests per attach by verb (the API server's audit log), then the same
// after deleting every pod. See docs/performance.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

func main() {
	var (
		c         scenario.Config
		kind      string
		upstream  string
		adcFlags  string
		jsonOut   string
		inProcess inProcessOptions
	)
	flag.IntVar(&c.Nodes, "nodes", 100, "nodes to seed")
	flag.IntVar(&c.PodsPerNode, "pods", 20, "pods per node, one PersistentVolume each")
	flag.Float64Var(&c.QPS, "qps", 20, "the controller's client QPS")
	flag.IntVar(&c.Burst, "burst", 30, "the controller's client burst")
	flag.StringVar(&kind, "controller", "adc", "controller under test: adc (the binary, -adc), kcm (kube-controller-manager, -kcm), kcm-adc (kube-controller-manager with adc inside, -kcm-adc) or adc-in-process")
	flag.StringVar(&c.ADCPath, "adc", "bin/adc", "the adc binary (make build)")
	flag.StringVar(&c.KCMPath, "kcm", "", "the kube-controller-manager binary (make kcm-assets)")
	flag.StringVar(&c.KCMADCPath, "kcm-adc", "bin/kcm-adc/kube-controller-manager-adc", "kube-controller-manager with adc inside (make kcm-adc)")
	flag.StringVar(&upstream, "upstream", "", "same as -controller=kcm -kcm=PATH")
	flag.StringVar(&adcFlags, "adc-flags", "", "extra flags for `adc controller`, space separated, e.g. --node-status-max-delay=1s")
	flag.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "give up on a phase after")
	flag.DurationVar(&c.SteadyWindow, "steady-window", 5*time.Second, "how long to count requests after convergence")
	flag.IntVar(&c.AttacherWorkers, "attacher-workers", 16, "simulated external-attacher workers")
	flag.IntVar(&c.SeedWorkers, "seed-workers", 64, "creates sent at once while seeding")
	flag.StringVar(&c.SeedCache, "seed-cache", "", "keep the seeded etcd data of each size in this folder and reuse it")
	flag.StringVar(&c.LogDir, "log-dir", os.TempDir(), "where the controller's log is kept")
	flag.StringVar(&c.CPUProfile, "cpu-profile", "", "with -controller=adc: write a CPU profile from adc's /debug/pprof/profile here")
	flag.DurationVar(&c.CPUProfileDelay, "cpu-profile-delay", 0, "start the CPU profile this long after adc starts")
	flag.IntVar(&c.CPUProfileSeconds, "cpu-profile-seconds", 20, "length of the CPU profile")
	flag.StringVar(&c.HeapProfile, "heap-profile", "", "with -controller=adc: write adc's /debug/pprof/heap here, -heap-profile-delay after adc starts")
	flag.DurationVar(&c.HeapProfileDelay, "heap-profile-delay", 5*time.Second, "when to take the heap profile")
	flag.StringVar(&jsonOut, "json", "", "also write the result as JSON to this file")
	inProcess.addFlags(flag.CommandLine)
	klog.InitFlags(nil)
	flag.Parse()
	c.Controller = scenario.Kind(kind)
	if upstream != "" {
		c.Controller, c.KCMPath = scenario.KCM, upstream
	}
	c.ADCFlags = strings.Fields(adcFlags)
	c.StartInProcess = inProcess.start(c)
	c.Progress = os.Stdout

	res, err := scenario.Run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
	scenario.Report(os.Stdout, res)
	if jsonOut != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench-e2e:", err)
			os.Exit(1)
		}
	}
}
