package scenario

import (
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
