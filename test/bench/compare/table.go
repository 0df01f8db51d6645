package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

// pair is one scenario's two runs; either may be nil when only one controller ran. round
// counts from 1 when the scenario ran in several rounds (-rounds), else it is 0.
type pair struct {
	config   scenario.Config
	kcm, adc *scenario.Result
	round    int
}

// measure is one line of the comparison.
type measure struct {
	name string
	// value returns the figure, false when the run did not measure it.
	value func(*scenario.Result) (float64, bool)
	// format prints a figure.
	format func(float64) string
	// compact puts the measure in the summary table.
	compact bool
}

func seconds(f func(*scenario.Result) float64) func(*scenario.Result) (float64, bool) {
	return func(r *scenario.Result) (float64, bool) { return f(r), true }
}

func processOnly(f func(*scenario.Result) float64) func(*scenario.Result) (float64, bool) {
	return func(r *scenario.Result) (float64, bool) { return f(r), r.ProcessMeasured }
}

func fmtSeconds(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}

func fmtFloat(v float64) string { return fmt.Sprintf("%.3f", v) }

func fmtEfficiency(v float64) string { return fmt.Sprintf("%.2f", v) }

// calibrated is a measure that needs the scenario's calibration (scenario.Calibrate).
func calibrated(f func(*scenario.Result) (float64, bool)) func(*scenario.Result) (float64, bool) {
	return func(r *scenario.Result) (float64, bool) {
		if r.Calibration == nil {
			return 0, false
		}
		return f(r)
	}
}

// measures are the lines printed for every scenario, in order; the per-verb request lines
// follow them.
var measures = []measure{
	{"first VolumeAttachment exists", seconds(func(r *scenario.Result) float64 { return r.FirstVolumeAttachment.Seconds() }), fmtSeconds, true},
	{"every VolumeAttachment exists", seconds(func(r *scenario.Result) float64 { return r.AllVolumeAttachments.Seconds() }), fmtSeconds, true},
	{"every volume attached (the attacher)", seconds(func(r *scenario.Result) float64 { return r.AllAttached.Seconds() }), fmtSeconds, false},
	{"p50 time to attached (the attacher)", seconds(func(r *scenario.Result) float64 { return r.AttachedP50.Seconds() }), fmtSeconds, false},
	{"all listed in node status", seconds(func(r *scenario.Result) float64 { return r.AllListed.Seconds() }), fmtSeconds, true},
	{"p50 time to listed", seconds(func(r *scenario.Result) float64 { return r.ListedP50.Seconds() }), fmtSeconds, true},
	{"p90 time to listed", seconds(func(r *scenario.Result) float64 { return r.ListedP90.Seconds() }), fmtSeconds, false},
	{"VA attached -> listed p50", seconds(func(r *scenario.Result) float64 { return r.AttachedToListedP50.Seconds() }), fmtSeconds, true},
	{"VA attached -> listed p99", seconds(func(r *scenario.Result) float64 { return r.AttachedToListedP99.Seconds() }), fmtSeconds, true},
	{"max RSS", processOnly(func(r *scenario.Result) float64 { return scenario.MiB(r.MaxRSS) }), func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }, true},
	{"max RSS per volume", processOnly(func(r *scenario.Result) float64 { return r.RSSPerVolumeKiB() }), func(v float64) string { return fmt.Sprintf("%.1f KiB", v) }, true},
	{"CPU seconds per 1000 attaches", processOnly(func(r *scenario.Result) float64 { return r.CPUPer1000Attaches() }), func(v float64) string { return fmt.Sprintf("%.2f s", v) }, true},
	{"API requests per attach", seconds(func(r *scenario.Result) float64 { return r.PerVolume(r.Attach.Total()) }), fmtFloat, true},
	{"writes per attach", seconds(func(r *scenario.Result) float64 { return r.WritesPerAttach() }), fmtFloat, true},
	{"API server p50 per VA create", seconds(func(r *scenario.Result) float64 {
		return r.Attach.Latency["create volumeattachments"].P50.Seconds()
	}), fmtSeconds, false},
	{"API server p99 per VA create", seconds(func(r *scenario.Result) float64 {
		return r.Attach.Latency["create volumeattachments"].P99.Seconds()
	}), fmtSeconds, false},
	{"writes needed (creates + node status writes)", calibrated(func(r *scenario.Result) (float64, bool) { return float64(r.WritesNeeded()), true }),
		func(v float64) string { return fmt.Sprintf("%.0f", v) }, false},
	{"ideal all listed (writes needed / calibrated rate)", calibrated(func(r *scenario.Result) (float64, bool) { return r.IdealAllListed().Seconds(), true }), fmtSeconds, false},
	{"efficiency, VAs created (ideal / measured)", calibrated(func(r *scenario.Result) (float64, bool) {
		return scenario.Efficiency(r.IdealAllCreated(), r.AllVolumeAttachments)
	}), fmtEfficiency, true},
	{"efficiency, all listed (ideal / measured)", calibrated(func(r *scenario.Result) (float64, bool) {
		return scenario.Efficiency(r.IdealAllListed(), r.AllListed)
	}), fmtEfficiency, true},
	{"best case all listed (calibration)", calibrated(func(r *scenario.Result) (float64, bool) { return r.BestAllListed().Seconds(), r.BestAllListed() > 0 }), fmtSeconds, false},
	{"best case p50 (calibration)", calibrated(func(r *scenario.Result) (float64, bool) { return r.BestListedP50().Seconds(), r.BestListedP50() > 0 }), fmtSeconds, false},
	{"efficiency vs the best case, all listed", calibrated(func(r *scenario.Result) (float64, bool) {
		return scenario.Efficiency(r.BestAllListed(), r.AllListed)
	}), fmtEfficiency, true},
	{"efficiency, p50 (ideal / measured)", calibrated(func(r *scenario.Result) (float64, bool) {
		return scenario.Efficiency(r.IdealP50(), r.ListedP50)
	}), fmtEfficiency, true},
	{"efficiency vs the best case, p50", calibrated(func(r *scenario.Result) (float64, bool) {
		return scenario.Efficiency(r.BestListedP50(), r.ListedP50)
	}), fmtEfficiency, true},
	{"machine load average (1 min) at start", seconds(func(r *scenario.Result) float64 { return r.LoadStart }), func(v float64) string { return fmt.Sprintf("%.1f", v) }, true},
	{"machine load average (1 min) at convergence", seconds(func(r *scenario.Result) float64 { return r.LoadConverged }), func(v float64) string { return fmt.Sprintf("%.1f", v) }, false},
	{"all pods deleted -> all VAs gone", seconds(func(r *scenario.Result) float64 { return r.AllDetached.Seconds() }), fmtSeconds, true},
	{"API requests per detach", seconds(func(r *scenario.Result) float64 { return r.PerVolume(r.Detach.Total()) }), fmtFloat, false},
	{"CPU seconds per 1000 detaches", processOnly(func(r *scenario.Result) float64 { return r.CPUDetach.Seconds() * 1000 / float64(r.Volumes) }), func(v float64) string { return fmt.Sprintf("%.2f s", v) }, false},
	{"API error responses (>= 400)", seconds(func(r *scenario.Result) float64 { return float64(sum(r.Errors)) }), func(v float64) string { return fmt.Sprintf("%.0f", v) }, false},
	{"error lines in the log", processOnly(func(r *scenario.Result) float64 { return float64(r.LogErrors) }), func(v float64) string { return fmt.Sprintf("%.0f", v) }, false},
}

func sum(m map[int]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// verbMeasures are one line per verb seen in either run's attach and detach phases.
func verbMeasures(p pair) []measure {
	var out []measure
	for _, phase := range []struct {
		name   string
		counts func(*scenario.Result) map[string]int64
	}{
		{"attach", func(r *scenario.Result) map[string]int64 { return r.Attach.ByVerb }},
		{"detach", func(r *scenario.Result) map[string]int64 { return r.Detach.ByVerb }},
	} {
		verbs := map[string]bool{}
		for _, r := range []*scenario.Result{p.kcm, p.adc} {
			if r != nil {
				for v := range phase.counts(r) {
					verbs[v] = true
				}
			}
		}
		names := make([]string, 0, len(verbs))
		for v := range verbs {
			names = append(names, v)
		}
		sort.Strings(names)
		for _, v := range names {
			out = append(out, measure{
				name:   fmt.Sprintf("  %s per %s", v, phase.name),
				value:  seconds(func(r *scenario.Result) float64 { return r.PerVolume(phase.counts(r)[v]) }),
				format: fmtFloat,
			})
		}
	}
	return out
}

// figure formats a run's figure of m, "-" when not measured.
func figure(m measure, r *scenario.Result) (float64, string) {
	if r == nil {
		return 0, "-"
	}
	v, ok := m.value(r)
	if !ok {
		return 0, "-"
	}
	return v, m.format(v)
}

// row is one measure of one scenario, formatted.
type row struct {
	measure, kcm, adc, ratio, goal string
}

// noRatio are the prefixes of measures without an adc/kcm ratio: the calibration's figures,
// the same for both controllers, efficiencies and the machine's load.
var noRatio = []string{"efficiency", "writes needed", "ideal", "best case", "machine load"}

func rows(p pair, all bool) []row {
	list := measures
	if all {
		list = append(append([]measure(nil), measures...), verbMeasures(p)...)
	}
	var out []row
	for _, m := range list {
		if !all && !m.compact {
			continue
		}
		kv, ks := figure(m, p.kcm)
		av, as := figure(m, p.adc)
		ratio := ""
		if ks != "-" && as != "-" && kv > 0 && !slices.ContainsFunc(noRatio, func(prefix string) bool { return strings.HasPrefix(m.name, prefix) }) {
			ratio = fmt.Sprintf("%.2f", av/kv)
		}
		out = append(out, row{m.name, ks, as, ratio, goalText(p, m.name)})
	}
	return out
}

// printPair prints one scenario's comparison, one line per measure.
func printPair(w io.Writer, p pair) {
	c := p.config
	fmt.Fprintf(w, "\n--- %d nodes x %d pods = %d volumes, client %g QPS / %d burst: kube-controller-manager 1.36.3 vs adc ---\n",
		c.Nodes, c.PodsPerNode, c.Volumes(), c.QPS, c.Burst)
	if k := calibrationOf(p); k != nil {
		fmt.Fprintf(w, "calibration (same run, same seed, watches and attacher): the best case listed the cluster in %.2f s, sent %d creates, %d at once, and %d status writes: %.0f writes/s; all attached after %.2f s (half after %.2f s), all listed after %.2f s (half after %.2f s); load average %.1f\n",
			k.Listing.Seconds(), k.Creates, k.InFlight, k.StatusWrites, k.Rate, k.AllAttached.Seconds(), k.AttachedP50.Seconds(), k.BestAllListed.Seconds(), k.BestListedP50.Seconds(), k.Load)
	}
	fmt.Fprintf(w, "%-50s %14s %14s %8s   %s\n", "measure", "kcm 1.36.3", "adc", "adc/kcm", "goal (issues #13, #28)")
	for _, r := range rows(p, true) {
		fmt.Fprintf(w, "%-50s %14s %14s %8s   %s\n", r.measure, r.kcm, r.adc, r.ratio, r.goal)
	}
}

// calibrationOf is the calibration of a scenario's runs, nil if none.
func calibrationOf(p pair) *scenario.Calibration {
	for _, r := range []*scenario.Result{p.kcm, p.adc} {
		if r != nil && r.Calibration != nil {
			return r.Calibration
		}
	}
	return nil
}

// printSummary prints every scenario's main measures as one Markdown table.
func printSummary(w io.Writer, all []pair) {
	fmt.Fprintf(w, "\n=== summary (2 shared cores: absolute figures vary between runs; compare within a scenario) ===\n\n")
	fmt.Fprintln(w, "| work | measure | kube-controller-manager 1.36.3 | adc | adc/kcm | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, p := range all {
		work := fmt.Sprintf("%d x %d, %g/%d QPS", p.config.Nodes, p.config.PodsPerNode, p.config.QPS, p.config.Burst)
		if p.round > 0 {
			work += fmt.Sprintf(", round %d", p.round)
		}
		if k := calibrationOf(p); k != nil {
			work += fmt.Sprintf(" (%.0f writes/s)", k.Rate)
		}
		for _, r := range rows(p, false) {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", work, r.measure, r.kcm, r.adc, r.ratio, strings.ReplaceAll(r.goal, "|", "/"))
		}
	}
}
