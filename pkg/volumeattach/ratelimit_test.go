package volumeattach

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A priority request arriving behind many queued normal requests is served next, not last.
func TestPriorityLimiterServesPriorityFirst(t *testing.T) {
	p := NewPriorityLimiter(100, 1) // one token every 10ms
	ctx := context.Background()
	normal, prio := p.Normal(), p.Priority()
	_ = normal.Wait(ctx) // drain the burst

	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = normal.Wait(ctx)
			mu.Lock()
			order = append(order, "normal")
			mu.Unlock()
		}()
	}
	// Let the normal requests queue up, then ask through the priority door.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_ = prio.Wait(ctx)
	mu.Lock()
	served := len(order)
	mu.Unlock()
	wg.Wait()
	if served > 5 {
		t.Errorf("priority request served after %d of 20 queued normal requests, want within a few", served)
	}
}
