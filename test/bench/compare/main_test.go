package main

import (
	"testing"
	"time"

	"github.com/migration-aware/adc/test/bench/internal/scenario"
)

func TestParseScenario(t *testing.T) {
	c, err := parseScenario(scenario.Config{}, "1000x10@1000/2000")
	if err != nil || c.Nodes != 1000 || c.PodsPerNode != 10 || c.QPS != 1000 || c.Burst != 2000 {
		t.Errorf("parseScenario = %+v, %v", c, err)
	}
	for _, bad := range []string{"", "100x20", "100@20/30", "ax20@20/30", "100x20@20", "0x20@20/30"} {
		if _, err := parseScenario(scenario.Config{}, bad); err == nil {
			t.Errorf("parseScenario(%q) accepted", bad)
		}
	}
}

// The goals of issue #13 are judged on the ratio adc/kcm or on adc's own figure.
func TestGoals(t *testing.T) {
	cfg := scenario.Config{Nodes: 100, PodsPerNode: 20, QPS: 1000, Burst: 2000}
	kcm := &scenario.Result{Volumes: 2000, AllListed: 8 * time.Second, ListedP50: 6 * time.Second}
	for _, tc := range []struct {
		name    string
		adc     scenario.Result
		measure string
		want    string
	}{
		{"ratio met", scenario.Result{Volumes: 2000, AllListed: 4 * time.Second}, "all listed in node status", "adc/kcm <= 0.5: met"},
		{"ratio missed", scenario.Result{Volumes: 2000, AllListed: 5 * time.Second}, "all listed in node status", "adc/kcm <= 0.5: missed"},
		{"p50 ratio", scenario.Result{Volumes: 2000, ListedP50: 2 * time.Second}, "p50 time to listed", "adc/kcm <= 0.4: met"},
		{"no goal", scenario.Result{Volumes: 2000}, "max RSS", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adc := tc.adc
			if got := goalText(pair{config: cfg, kcm: kcm, adc: &adc}, tc.measure); got != tc.want {
				t.Errorf("goalText(%s) = %q, want %q", tc.measure, got, tc.want)
			}
		})
	}
	budget := scenario.Config{Nodes: 100, PodsPerNode: 20, QPS: 20, Burst: 30}
	slow := &scenario.Result{Volumes: 2000, AllListed: 111 * time.Second, APIBudget: 105 * time.Second}
	if got := goalText(pair{config: budget, kcm: kcm, adc: slow}, "all listed in node status"); got != "<= API budget + 5%: missed" {
		t.Errorf("API budget goal = %q", got)
	}
}

// Efficiency is the calibration's best case over the measured time; issue #28's goals judge
// adc's at 2,000 and 10,000 volumes, and "every VolumeAttachment exists" against
// kube-controller-manager at every size.
func TestEfficiencyGoals(t *testing.T) {
	cfg := scenario.Config{Nodes: 100, PodsPerNode: 20, QPS: 1000, Burst: 2000}
	// The best case listed everything after 7 s, half after 3.5 s.
	cal := &scenario.Calibration{Rate: 300, BestAllListed: 7 * time.Second, BestListedP50: 3500 * time.Millisecond}
	kcm := &scenario.Result{Volumes: 2000, Nodes: 100, AllVolumeAttachments: 6 * time.Second, Calibration: cal}
	for _, tc := range []struct {
		name    string
		adc     scenario.Result
		measure string
		want    string
	}{
		{"all listed efficient", scenario.Result{AllListed: 7500 * time.Millisecond}, "efficiency vs the best case, all listed", ">= 0.9: met"},
		{"all listed slow", scenario.Result{AllListed: 9 * time.Second}, "efficiency vs the best case, all listed", ">= 0.9: missed"},
		{"p50 efficient", scenario.Result{ListedP50: 3800 * time.Millisecond}, "efficiency vs the best case, p50", ">= 0.9: met"},
		{"p50 slow", scenario.Result{ListedP50: 4 * time.Second}, "efficiency vs the best case, p50", ">= 0.9: missed"},
		{"created no later than kcm", scenario.Result{AllVolumeAttachments: 6 * time.Second}, "every VolumeAttachment exists", "adc/kcm <= 1.0: met"},
		{"created later than kcm", scenario.Result{AllVolumeAttachments: 7 * time.Second}, "every VolumeAttachment exists", "adc/kcm <= 1.0: missed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adc := tc.adc
			adc.Volumes, adc.Nodes, adc.Calibration = 2000, 100, cal
			if got := goalText(pair{config: cfg, kcm: kcm, adc: &adc}, tc.measure); got != tc.want {
				t.Errorf("goalText(%s) = %q, want %q", tc.measure, got, tc.want)
			}
		})
	}
	uncalibrated := scenario.Result{Volumes: 2000, Nodes: 100, AllListed: time.Second}
	if got := goalText(pair{config: cfg, kcm: kcm, adc: &uncalibrated}, "efficiency vs the best case, all listed"); got != ">= 0.9: missed" {
		t.Errorf("uncalibrated efficiency goal = %q", got)
	}
}
