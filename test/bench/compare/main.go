// Command compare runs the end-to-end attach benchmark for kube-controller-manager 1.36.3 and
// for adc back to back on the same seeded cluster (a fresh control plane from a copy of it
// for each run) and prints, per scenario, one line per measure with both figures, the ratio
// adc/kcm and the goal of issue #13, then one compact table of every scenario for a closing
// note. `make bench-compare` runs the three scenarios; `make bench-scale` runs
// 5000 nodes x 10 pods. See docs/performance.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

func main() {
	var (
		base        scenario.Config
		scenarios   string
		controllers string
		adcFlags    string
		jsonOut     string
		calibrate   bool
		rounds      int
	)
	flag.StringVar(&scenarios, "scenarios", "100x20@1000/2000,1000x10@1000/2000,100x20@20/30", "comma-separated NODESxPODS@QPS/BURST")
	flag.StringVar(&controllers, "controllers", "kcm,adc", "controllers to run per scenario, in order: kcm, adc (the binary), kcm-adc (kube-controller-manager with adc inside, -kcm-adc); the ratios put the last that is not kcm in adc's place")
	base.AddFlags(flag.CommandLine, 15*time.Minute)
	flag.StringVar(&adcFlags, "adc-flags", "", "extra flags for `adc controller`, space separated")
	flag.DurationVar(&base.SteadyWindow, "steady-window", 5*time.Second, "how long to count requests after convergence")
	flag.StringVar(&jsonOut, "json", "", "also write every result as JSON to this file")
	flag.BoolVar(&calibrate, "calibrate", true, "first measure, per scenario and round, the write rate its control plane sustains and the best case on it (scenario.Calibrate), for the efficiency lines")
	flag.IntVar(&rounds, "rounds", 1, "runs of each scenario's controllers, in alternating order; with more than one, the adc/kcm ratios of every round and their median are printed at the end")
	klog.InitFlags(nil)
	flag.Parse()
	base.ADCFlags = strings.Fields(adcFlags)
	base.Progress = os.Stdout
	if err := checkControllers(controllers); err != nil {
		fail(err)
	}

	// Both controllers of a scenario start from the same seed: keep it for this run only.
	cleanup, err := base.TempSeedCache()
	if err != nil {
		fail(err)
	}
	defer cleanup()
	var all []pair
	for _, s := range strings.Split(scenarios, ",") {
		c, err := parseScenario(base, strings.TrimSpace(s))
		if err != nil {
			fail(err)
		}
		for round := 0; round < max(rounds, 1); round++ {
			p := pair{config: c}
			if rounds > 1 {
				p.round = round + 1
			}
			// Each round calibrates anew, next to its runs: this machine's load drifts.
			var cal *scenario.Calibration
			if calibrate {
				fmt.Printf("\n=== %s: calibration (round %d) ===\n", c.Name(), round+1)
				if cal, err = scenario.Calibrate(context.Background(), c); err != nil {
					fail(err)
				}
			}
			for _, k := range order(strings.Split(controllers, ","), round) {
				c.Controller = scenario.Kind(strings.TrimSpace(k))
				fmt.Printf("\n=== %s: %s (round %d) ===\n", c.Name(), c.Controller, round+1)
				res, err := scenario.Run(context.Background(), c)
				if err != nil {
					fail(err)
				}
				res.Calibration = cal
				scenario.Report(os.Stdout, res)
				switch c.Controller {
				case scenario.KCM:
					p.kcm = res
				default:
					p.adc = res
				}
			}
			printPair(os.Stdout, p)
			all = append(all, p)
		}
	}
	printSummary(os.Stdout, all)
	printRounds(os.Stdout, all)
	if jsonOut != "" {
		var out []*scenario.Result
		for _, p := range all {
			out = append(out, p.kcm, p.adc)
		}
		data, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			fail(err)
		}
	}
}

// parseScenario reads NODESxPODS@QPS/BURST into a copy of base.
func parseScenario(base scenario.Config, s string) (scenario.Config, error) {
	size, budget, ok := strings.Cut(s, "@")
	nodes, pods, ok1 := strings.Cut(size, "x")
	qps, burst, ok2 := strings.Cut(budget, "/")
	c := base
	var errs [4]error
	c.Nodes, errs[0] = strconv.Atoi(nodes)
	c.PodsPerNode, errs[1] = strconv.Atoi(pods)
	c.QPS, errs[2] = strconv.ParseFloat(qps, 64)
	c.Burst, errs[3] = strconv.Atoi(burst)
	if !ok || !ok1 || !ok2 || errs != [4]error{} || c.Nodes < 1 || c.PodsPerNode < 1 || c.QPS <= 0 || c.Burst < 1 {
		return c, fmt.Errorf("scenario %q: want NODESxPODS@QPS/BURST, e.g. 100x20@1000/2000", s)
	}
	return c, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-compare:", err)
	os.Exit(1)
}

// checkControllers refuses a controller the benchmark cannot run before anything is seeded.
func checkControllers(list string) error {
	for _, k := range strings.Split(list, ",") {
		switch scenario.Kind(strings.TrimSpace(k)) {
		case scenario.KCM, scenario.ADC, scenario.KCMADC:
		default:
			return fmt.Errorf("unknown controller %q in -controllers: want kcm, adc or kcm-adc", strings.TrimSpace(k))
		}
	}
	return nil
}
