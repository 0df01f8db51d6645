// Command failover measures a restart at scale (`make bench-failover`): two adc replicas
// (leader election on, the shipped defaults) converge a seeded cluster of N nodes x M pods;
// the leader is SIGKILLed and the standby takes over. Then kube-controller-manager 1.36.3 is
// started on the same converged cluster. For each it reports the time to lead, to be ready,
// to its first decision (a canary pod created at the kill or the start) and to list the
// canary, its API requests during the start (writes besides the canary's and the Lease's
// should be none: nothing else changed) and its peak RSS. See docs/performance.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

func main() {
	var (
		c        scenario.Config
		adcFlags string
		jsonOut  string
	)
	flag.IntVar(&c.Nodes, "nodes", 5000, "nodes to seed")
	flag.IntVar(&c.PodsPerNode, "pods", 10, "pods per node, one PersistentVolume each")
	flag.Float64Var(&c.QPS, "qps", 1000, "the controllers' client QPS")
	flag.IntVar(&c.Burst, "burst", 2000, "the controllers' client burst")
	c.AddFlags(flag.CommandLine, 30*time.Minute)
	flag.StringVar(&adcFlags, "adc-flags", "", "extra flags for `adc controller`, space separated")
	flag.StringVar(&jsonOut, "json", "", "also write the result as JSON to this file")
	klog.InitFlags(nil)
	flag.Parse()
	c.ADCFlags = strings.Fields(adcFlags)
	c.Progress = os.Stdout
	cleanup, err := c.TempSeedCache()
	if err != nil {
		fail(err)
	}
	defer cleanup()
	res, err := scenario.Failover(context.Background(), c)
	if err != nil {
		fail(err)
	}
	report(os.Stdout, res)
	if jsonOut != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			fail(err)
		}
	}
}

func report(w io.Writer, r *scenario.FailoverResult) {
	fmt.Fprintf(w, "\n=== restart at scale, %s (%d volumes converged by adc in %.2f s) ===\n\n", r.Scenario, r.Volumes, r.Converge.Seconds())
	fmt.Fprintln(w, "| measure (from the SIGKILL of adc's leader / kube-controller-manager's start) | adc (standby takes over) | kube-controller-manager 1.36.3 (started) |")
	fmt.Fprintln(w, "|---|---|---|")
	secs := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	line := func(name string, f func(t scenario.Takeover) string) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, f(r.ADC), f(r.KCM))
	}
	line("holds the Lease", func(t scenario.Takeover) string { return secs(t.Leading) })
	line("ready (caches synced, deciding)", func(t scenario.Takeover) string { return secs(t.Ready) })
	line("first decision (canary VolumeAttachment created)", func(t scenario.Takeover) string { return secs(t.FirstDecision) })
	line("first decision after taking the Lease", func(t scenario.Takeover) string {
		if t.Leading == 0 {
			return "-"
		}
		return secs(t.FirstDecision - t.Leading)
	})
	line("canary listed in node status", func(t scenario.Takeover) string { return secs(t.CanaryListed) })
	line("API requests until 10 s after the canary was listed", func(t scenario.Takeover) string { return fmt.Sprint(t.Requests.Total()) })
	line("  by verb", func(t scenario.Takeover) string { return counts(t.Requests.ByVerb) })
	line("writes for the canary (its create, its node's status)", func(t scenario.Takeover) string { return fmt.Sprint(t.CanaryWrites) })
	line("Lease writes (leader election)", func(t scenario.Takeover) string { return fmt.Sprint(t.LeaseWrites) })
	line("other writes (goal: none, nothing else changed)", func(t scenario.Takeover) string {
		return fmt.Sprintf("%d %s", t.OtherWrites, counts(t.OtherWriteRequests))
	})
	line("peak RSS (VmHWM)", func(t scenario.Takeover) string { return fmt.Sprintf("%.0f MiB", scenario.MiB(t.MaxRSS)) })
	line("CPU seconds until then", func(t scenario.Takeover) string { return fmt.Sprintf("%.2f s", t.CPU.Seconds()) })
	fmt.Fprintf(w, "\nlogs: %s, %s\n", r.ADC.Log, r.KCM.Log)
}

func counts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-failover:", err)
	os.Exit(1)
}
