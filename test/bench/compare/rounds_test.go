package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

func TestOrderAlternates(t *testing.T) {
	in := []string{"kcm", "adc"}
	if got := order(in, 0); !slices.Equal(got, in) {
		t.Errorf("round 1: %v", got)
	}
	if got := order(in, 1); !slices.Equal(got, []string{"adc", "kcm"}) {
		t.Errorf("round 2: %v", got)
	}
	if !slices.Equal(in, []string{"kcm", "adc"}) {
		t.Errorf("order changed its input: %v", in)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{1.1, 0.9, 1.0}, 1.0}, {[]float64{4, 1, 2, 3}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// printRounds gives one line per measure with every round's ratio and their median, and
// nothing for a scenario run once.
func TestPrintRounds(t *testing.T) {
	cfg := scenario.Config{Nodes: 100, PodsPerNode: 20, QPS: 1000, Burst: 2000}
	once := scenario.Config{Nodes: 1000, PodsPerNode: 10, QPS: 1000, Burst: 2000}
	run := func(created time.Duration) *scenario.Result {
		return &scenario.Result{Volumes: 2000, AllVolumeAttachments: created}
	}
	var b strings.Builder
	printRounds(&b, []pair{
		{config: cfg, kcm: run(3 * time.Second), adc: run(3300 * time.Millisecond)},
		{config: cfg, kcm: run(3 * time.Second), adc: run(2700 * time.Millisecond)},
		{config: cfg, kcm: run(4 * time.Second), adc: run(3600 * time.Millisecond)},
		{config: once, kcm: run(time.Second), adc: run(time.Second)},
	})
	out := b.String()
	if !strings.Contains(out, "| every VolumeAttachment exists | 1.10, 0.90, 0.90 | 0.90 |") {
		t.Errorf("no per-round line with its median:\n%s", out)
	}
	if strings.Contains(out, "1000x10") {
		t.Errorf("a scenario run once is summarized:\n%s", out)
	}
	if strings.Contains(out, "efficiency") {
		t.Errorf("efficiency lines without a calibration:\n%s", out)
	}
}

// Calibrated rounds add each controller's efficiency against its round's best case, per
// round and as a median.
func TestPrintRoundsEfficiency(t *testing.T) {
	cfg := scenario.Config{Nodes: 100, PodsPerNode: 20, QPS: 1000, Burst: 2000}
	run := func(best, listed time.Duration) *scenario.Result {
		cal := &scenario.Calibration{Rate: 1000, BestAllListed: best, BestListedP50: best / 2}
		return &scenario.Result{Volumes: 2000, Nodes: 100, AllListed: listed, ListedP50: listed / 2, Calibration: cal}
	}
	var b strings.Builder
	printRounds(&b, []pair{
		{config: cfg, kcm: run(3*time.Second, 6*time.Second), adc: run(3*time.Second, 4*time.Second)},
		{config: cfg, kcm: run(4*time.Second, 5*time.Second), adc: run(4*time.Second, 5*time.Second)},
		{config: cfg, kcm: run(2*time.Second, 5*time.Second), adc: run(2*time.Second, 2500*time.Millisecond)},
	})
	out := b.String()
	for _, want := range []string{
		"| efficiency vs the best case, all listed | 0.50, 0.80, 0.40 | 0.50 | 0.75, 0.80, 0.80 | 0.80 |",
		"| efficiency vs the best case, p50 | 0.50, 0.80, 0.40 | 0.50 | 0.75, 0.80, 0.80 | 0.80 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestCheckControllers(t *testing.T) {
	for _, tc := range []struct {
		list string
		ok   bool
	}{
		{"kcm,adc", true},
		{"kcm, kcm-adc", true},
		{"adc,adc", true},
		{"kcm,adc-in-process", false},
		{"kcm,kube-controller-manager", false},
	} {
		if err := checkControllers(tc.list); (err == nil) != tc.ok {
			t.Errorf("checkControllers(%q) = %v, want ok %v", tc.list, err, tc.ok)
		}
	}
}
