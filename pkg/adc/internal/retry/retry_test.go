package retry

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// failures fails item at each of the given offsets from start and returns the delay the last
// failure was given.
func failures(l workqueue.TypedRateLimiter[string], clk *testingclock.FakeClock, start time.Time, at []time.Duration) time.Duration {
	var d time.Duration
	for _, off := range at {
		clk.SetTime(start.Add(off))
		d = l.When("n1")
	}
	return d
}

// every returns n offsets step apart.
func every(step time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i) * step
	}
	return out
}

func TestWhen(t *testing.T) {
	start := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   []time.Duration
		// want is the delay of the last failure, from its time; with atMost, its bound.
		want   time.Duration
		atMost bool
	}{
		{"first failure", every(0, 1), 5 * time.Millisecond, false},
		{"each retry failed: doubles", []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond}, 20 * time.Millisecond, false},
		{"failures before the retry is due keep its time", []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, 3 * time.Millisecond, false},
		// The chaos test's API server outage: a node reconciled on every event failed 24
		// times in 9 s. client-go's default put its next retry 1,000 s away.
		{"24 failures in 9 s: about the outage, not 1,000 s", every(375*time.Millisecond, 24), 9 * time.Second, true},
		{"capped", every(time.Hour, 20), DefaultMax, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(start)
			if got := failures(New(clk, DefaultBase, DefaultMax), clk, start, tc.at); got != tc.want && (!tc.atMost || got > tc.want) {
				t.Errorf("delay after failures at %v = %v, want %v", tc.at, got, tc.want)
			}
		})
	}
}

// The case this package exists for, against client-go's default limiter.
func TestDefaultControllerRateLimiterWaitsFarLonger(t *testing.T) {
	var d time.Duration
	l := workqueue.DefaultTypedControllerRateLimiter[string]()
	for range 24 {
		d = l.When("n1")
	}
	if d != 1000*time.Second {
		t.Errorf("client-go's default after 24 failures: %v; the package comment says 1,000 s", d)
	}
}

func TestForgetStartsOver(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l := New(clk, DefaultBase, DefaultMax)
	for i := 0; i < 5; i++ {
		l.When("n1")
		clk.Step(time.Minute)
	}
	if n := l.NumRequeues("n1"); n != 5 {
		t.Errorf("NumRequeues = %d, want 5", n)
	}
	l.Forget("n1")
	if d, n := l.When("n1"), l.NumRequeues("n1"); d != DefaultBase || n != 1 {
		t.Errorf("after Forget: delay %v, requeues %d; want %v, 1", d, n, DefaultBase)
	}
	if d := l.When("n2"); d != DefaultBase {
		t.Errorf("another item shares the backoff: %v", d)
	}
}
