package volumeattach

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// queueNormals drains the burst, then starts n normal requests and waits until one of them
// holds the normal door's gate with a token reserved (the limiter is in debt) and the others
// queue behind it: the state a priority request must not wait behind. It returns the order
// in which requests are served and a function that waits for the normal ones.
func queueNormals(t testing.TB, p *PriorityLimiter, n int) (served func() []string, record func(string), waitNormals func()) {
	t.Helper()
	ctx := context.Background()
	normal := p.Normal()
	_ = normal.Wait(ctx) // drain the burst
	var mu sync.Mutex
	var order []string
	record = func(who string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, who)
	}
	served = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = normal.Wait(ctx)
			record(fmt.Sprintf("normal-%d", i))
		}()
	}
	// The gate is held and a token is owed: a normal request is inside the limiter's Wait,
	// and every other one waits for the gate.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(p.gate) == 1 && p.limiter.Tokens() < 0, nil
	}); err != nil {
		t.Fatalf("normal requests never queued: %v", err)
	}
	return served, record, wg.Wait
}

// A priority request arriving behind many queued normal requests is served next, not last:
// it waits at most for the one normal request that already holds a reserved token. The
// order is the limiter's: reservations are served in the order they were made, and the
// queued normal requests make theirs only one at a time, each after the previous one was
// served.
func TestPriorityLimiterServesPriorityFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		qps     float32
		normals int
	}{
		{"10 queued at 20 qps", 20, 10},
		{"5 queued at 10 qps", 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPriorityLimiter(tc.qps, 1)
			served, record, waitNormals := queueNormals(t, p, tc.normals)
			_ = p.Priority().Wait(context.Background())
			record("priority")
			waitNormals()
			order := served()
			pos := -1
			for i, who := range order {
				if who == "priority" {
					pos = i
				}
			}
			t.Logf("served in order %v", order)
			// Position 0: served before the gate's holder (its reservation came first, but
			// recording is not atomic with the limiter); position 1: right after it.
			if pos < 0 || pos > 1 {
				t.Errorf("priority request served at position %d of %d, want right after the normal request holding the gate (position 1)", pos, len(order))
			}
		})
	}
}

// The wait of a priority request behind queued normal requests, reported in tokens (1/qps):
// about two (the token the gate's holder reserved, then its own), however many normal
// requests queue. A budget for that wait belongs here, not in a test.
func BenchmarkPriorityWaitBehindNormals(b *testing.B) {
	const qps = 200
	for _, normals := range []int{1, 20} {
		b.Run(fmt.Sprintf("normals=%d", normals), func(b *testing.B) {
			var waited time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				p := NewPriorityLimiter(qps, 1)
				_, _, waitNormals := queueNormals(b, p, normals)
				b.StartTimer()
				start := time.Now()
				_ = p.Priority().Wait(context.Background())
				waited += time.Since(start)
				b.StopTimer()
				waitNormals()
				b.StartTimer()
			}
			b.ReportMetric(float64(waited)/float64(b.N)/float64(time.Second/qps), "tokens/priority-wait")
		})
	}
}

// The creates kept in flight follow the budget's QPS (what it takes to spend it at the API
// server's time per create), within bounds, and never follow a worker count.
func TestCreatesInFlightFollowsTheBudget(t *testing.T) {
	for _, tc := range []struct {
		qps   float32
		burst int
		want  int
	}{
		{qps: 5, burst: 10, want: minCreatesInFlight},
		{qps: 20, burst: 30, want: minCreatesInFlight},
		{qps: 200, burst: 400, want: 20},
		{qps: 300, burst: 600, want: 30},
		{qps: 1000, burst: 2000, want: 100},
		{qps: 5000, burst: 10000, want: maxCreatesInFlight},
	} {
		if got := NewPriorityLimiter(tc.qps, tc.burst).CreatesInFlight(); got != tc.want {
			t.Errorf("%v/%d: CreatesInFlight() = %d, want %d", tc.qps, tc.burst, got, tc.want)
		}
	}
}
