package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

// order is the controllers' order in a round: as given in even rounds, reversed in odd ones,
// so that neither always runs first on a fresh control plane nor always right after the
// other's detach phase (two shared cores: each run's figures carry the machine's noise).
func order(controllers []string, round int) []string {
	out := slices.Clone(controllers)
	if round%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// roundMeasures are the measures whose adc/kcm ratios printRounds summarizes: issue #28's
// goals and the figures they trade against.
var roundMeasures = []string{"every VolumeAttachment exists", "all listed in node status", "p50 time to listed", "writes per attach"}

// printRounds prints, per scenario run in more than one round, each round's adc/kcm ratio of
// the main measures and their median: one round's ratio near 1.0 says little on this
// machine, the median of rounds in alternating order says which controller is ahead.
func printRounds(w io.Writer, all []pair) {
	byScenario := map[string][]pair{}
	var names []string
	for _, p := range all {
		n := p.config.Name()
		if byScenario[n] == nil {
			names = append(names, n)
		}
		byScenario[n] = append(byScenario[n], p)
	}
	for _, n := range names {
		ps := byScenario[n]
		if len(ps) < 2 {
			continue
		}
		fmt.Fprintf(w, "\n=== %s: adc/kcm over %d rounds (controllers' order alternating) ===\n\n", n, len(ps))
		fmt.Fprintln(w, "| measure | adc/kcm per round | median | kcm per round | adc per round |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, name := range roundMeasures {
			m, ok := measureNamed(name)
			if !ok {
				continue
			}
			var ratios []float64
			var rs, ks, as []string
			for _, p := range ps {
				kv, kf := figure(m, p.kcm)
				av, af := figure(m, p.adc)
				ks, as = append(ks, kf), append(as, af)
				if kf == "-" || af == "-" || kv <= 0 {
					rs = append(rs, "-")
					continue
				}
				ratios = append(ratios, av/kv)
				rs = append(rs, fmt.Sprintf("%.2f", av/kv))
			}
			med := "-"
			if len(ratios) > 0 {
				med = fmt.Sprintf("%.2f", median(ratios))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, strings.Join(rs, ", "), med, strings.Join(ks, ", "), strings.Join(as, ", "))
		}
		printRoundEfficiency(w, ps)
	}
}

// roundEfficiencies are the efficiency measures printRoundEfficiency summarizes: issue #28's
// goal, each controller against its round's best case.
var roundEfficiencies = []string{"efficiency vs the best case, all listed", "efficiency vs the best case, p50"}

// printRoundEfficiency prints each controller's efficiency per round and its median, when
// the rounds were calibrated: one round's calibration falls in its own minute of a shared
// machine, the median over rounds is the figure to read.
func printRoundEfficiency(w io.Writer, ps []pair) {
	header := false
	for _, name := range roundEfficiencies {
		m, ok := measureNamed(name)
		if !ok {
			continue
		}
		var cols [2][]string
		var vals [2][]float64
		for _, p := range ps {
			for c, r := range []*scenario.Result{p.kcm, p.adc} {
				v, f := figure(m, r)
				cols[c] = append(cols[c], f)
				if f != "-" {
					vals[c] = append(vals[c], v)
				}
			}
		}
		if len(vals[0])+len(vals[1]) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n| measure | kcm per round | kcm median | adc per round | adc median |\n|---|---|---|---|---|\n")
			header = true
		}
		meds := [2]string{"-", "-"}
		for c := range vals {
			if len(vals[c]) > 0 {
				meds[c] = fmt.Sprintf("%.2f", median(vals[c]))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, strings.Join(cols[0], ", "), meds[0], strings.Join(cols[1], ", "), meds[1])
	}
}

// measureNamed is the measure of that name in measures.
func measureNamed(name string) (measure, bool) {
	i := slices.IndexFunc(measures, func(m measure) bool { return m.name == name })
	if i < 0 {
		return measure{}, false
	}
	return measures[i], true
}

// median of a non-empty slice (the mean of the middle two for an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
