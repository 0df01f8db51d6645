package scenario

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{"p90 of ten is the ninth", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
		{"p99 of ten is the last", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 99, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(p%g) = %s, want %s", tc.p, got, tc.want)
			}
		})
	}
}

func TestUniqueNameOfPV(t *testing.T) {
	if got, want := uniqueNameOfPV("pv-"+podName(nodeName(3), 7)), "kubernetes.io/csi/bench.csi.example.com^vol-node-0003-pod-07"; got != want {
		t.Errorf("uniqueNameOfPV = %q, want %q", got, want)
	}
}

func TestCountLogErrors(t *testing.T) {
	stop := time.Date(2026, 11, 23, 13, 56, 0, 0, time.Local)
	log := "E1123 13:44:23.099194   26351 options.go:205] The manifest file is empty, ignoring.\n" +
		"I1123 13:50:00.000000   26351 x.go:1] fine\n" +
		"E1123 13:55:59.999999   26351 x.go:2] before the stop\n" +
		"E1123 13:56:00.526982    4966 controller.go:256] cancelled while stopping\n"
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := countLogErrors(path, stop); got != 2 {
		t.Errorf("countLogErrors = %d, want 2 (error lines before the stop)", got)
	}
}
