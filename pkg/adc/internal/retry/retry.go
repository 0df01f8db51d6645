// Package retry is the backoff of adc's work queues of nodes (node reconciles, node status
// writes): exponential in time, not in attempts. (VolumeAttachment creates back off per name
// in their own queue, package creates, which also keeps a refused create from being sent
// before its backoff is over.)
//
// client-go's default controller rate limiter doubles an item's delay on every failure, up to
// 1,000 s, and adds a shared 10-per-second bucket. adc reconciles a node on every event that
// touches it, so during an API server outage a busy node fails many times between two
// scheduled retries: a couple of dozen failures in a few seconds put its next retry 1,000 s
// away (and the bucket spreads every node's retries further). A node that nothing touches
// after the outage then waits that long for the detach or the status write its failed
// reconcile left undone. Here a failure that comes before the item's pending retry
// is due keeps that retry's time: the delay doubles once per retry that itself failed, so
// after an outage the wait is about as long as the outage was (at most Max), as with
// kube-controller-manager's per-operation backoff.
package retry

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Default delays: the first retry of a failure comes at once (an optimistic conflict), later
// ones double up to kube-controller-manager's backoff cap for attach and detach operations.
const (
	DefaultBase = 5 * time.Millisecond
	DefaultMax  = 2 * time.Minute
)

// Limiter is a workqueue.TypedRateLimiter of item names whose delay doubles per retry that
// failed, not per failure.
type Limiter struct {
	clock     clock.PassiveClock
	base, max time.Duration

	mu    sync.Mutex
	items map[string]*backoff
}

var _ workqueue.TypedRateLimiter[string] = &Limiter{}

// backoff is one item's state: the delay of its last scheduled retry, when that retry is due,
// and how many retries were scheduled.
type backoff struct {
	delay   time.Duration
	due     time.Time
	retries int
}

// New returns a limiter with delays from base doubling to max, timed by clk.
func New(clk clock.PassiveClock, base, max time.Duration) *Limiter {
	return &Limiter{clock: clk, base: base, max: max, items: map[string]*backoff{}}
}

// When returns how long to wait before retrying item after a failure: while an earlier
// failure's retry is still pending, the time left until it; else the next delay, doubled from
// the last one.
func (l *Limiter) When(item string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	b := l.items[item]
	switch {
	case b == nil:
		b = &backoff{delay: l.base}
		l.items[item] = b
	case now.Before(b.due):
		return b.due.Sub(now)
	default:
		b.delay = min(2*b.delay, l.max)
	}
	b.due = now.Add(b.delay)
	b.retries++
	return b.delay
}

// Forget ends item's backoff: it succeeded.
func (l *Limiter) Forget(item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.items, item)
}

// NumRequeues returns how many retries of item were scheduled since it last succeeded.
func (l *Limiter) NumRequeues(item string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.items[item]; b != nil {
		return b.retries
	}
	return 0
}
