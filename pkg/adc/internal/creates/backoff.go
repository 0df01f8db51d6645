package creates

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Default backoff of a VolumeAttachment name whose create failed: kube-controller-manager's
// for attach and detach operations (500 ms doubling to 2m2s, no jitter).
const (
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 2*time.Minute + 2*time.Second
)

// refusal is the backoff of a VolumeAttachment name whose last create failed. It exists so
// that a create the API server refuses (an admission webhook, a quota) is sent again at the
// pace of its backoff, not at the pace of its node's events: every reconcile of the node
// decides the create again.
type refusal struct {
	backoff *backoff.ExponentialBackOff
	// due is when a create of the name may be sent again.
	due time.Time
	// msg is the last failure, for its pair's reason; "" once a reconcile took it (TakeErr).
	msg string
}

// refusedLocked records a failed create of name at now and returns how long the name waits
// before its next create: the delay doubles per failed create (a create is never sent before
// the previous delay is over, so each failure is one more retry that failed).
func (q *Queue) refusedLocked(name, msg string, now time.Time) time.Duration {
	r := q.refusals[name]
	if r == nil {
		r = &refusal{backoff: &backoff.ExponentialBackOff{
			InitialInterval: q.opts.InitialBackoff,
			Multiplier:      2,
			MaxInterval:     q.opts.MaxBackoff,
			MaxElapsedTime:  0, // a refused create is retried for as long as it is decided
			Stop:            backoff.Stop,
			Clock:           q.opts.Clock,
		}}
		r.backoff.Reset()
		q.refusals[name] = r
	}
	d := r.backoff.NextBackOff()
	r.due, r.msg = now.Add(d), msg
	return d
}

// waitLocked returns how long the queued create of name has to wait for its backoff; 0 when
// it may be sent now, or nothing of the name is queued.
func (q *Queue) waitLocked(name string, now time.Time) time.Duration {
	r := q.refusals[name]
	if _, queued := q.jobs[name]; !queued || r == nil || !now.Before(r.due) {
		return 0
	}
	return r.due.Sub(now)
}

// sweepLocked forgets, at most once per MaxBackoff, the backoffs that have been over for
// MaxBackoff or longer without a create of their name being queued or sent: the node's retry
// of a failed create comes when its backoff is over, so a name no reconcile decided again
// since is one no pod wants any more (its pod left, its node went). Bounded so, the backoffs
// are those of names that failed in the last few minutes, however many pods come and go and
// without the controller having to tell which names it no longer wants. A name decided again
// later starts over from InitialBackoff: it was not sent for MaxBackoff at least.
func (q *Queue) sweepLocked(now time.Time) {
	if now.Before(q.nextSweep) {
		return
	}
	q.nextSweep = now.Add(q.opts.MaxBackoff)
	for name, r := range q.refusals {
		_, queued := q.jobs[name]
		_, inFlight := q.inFlight[name]
		if !queued && !inFlight && now.Sub(r.due) >= q.opts.MaxBackoff {
			delete(q.refusals, name)
		}
	}
}
