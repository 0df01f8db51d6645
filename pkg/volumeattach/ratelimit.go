package volumeattach

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// PriorityLimiter is one client QPS budget with two doors. Node status patches go through
// the priority door: they are what lets the kubelet mount an attached volume, so they must
// not queue behind hundreds of VolumeAttachment creates of other nodes. Everything else
// goes through the normal door, where callers take turns one at a time, so that at most one
// normal request ever holds a future token and a priority request waits at most one token.
type PriorityLimiter struct {
	limiter *rate.Limiter
	qps     float32
	gate    chan struct{}
}

// NewPriorityLimiter returns a limiter of qps requests per second with the given burst.
func NewPriorityLimiter(qps float32, burst int) *PriorityLimiter {
	return &PriorityLimiter{limiter: rate.NewLimiter(rate.Limit(qps), burst), qps: qps, gate: make(chan struct{}, 1)}
}

// Normal is the door for ordinary requests, for rest.Config.RateLimiter.
func (p *PriorityLimiter) Normal() flowcontrol.RateLimiter { return door{p: p} }

// Priority is the door for node status patches, for rest.Config.RateLimiter.
func (p *PriorityLimiter) Priority() flowcontrol.RateLimiter { return door{p: p, priority: true} }

type door struct {
	p        *PriorityLimiter
	priority bool
}

var _ flowcontrol.RateLimiter = door{}

func (d door) Wait(ctx context.Context) error {
	if d.priority {
		return d.p.limiter.Wait(ctx)
	}
	select {
	case d.p.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.p.gate }()
	return d.p.limiter.Wait(ctx)
}

// Saturated reports whether the budget is spent: a request sent now would wait for a token,
// for about the returned time. It is what "under load" means to the node status writer,
// which then lets a node's newly attached volumes wait for the node's pending attaches, so
// that a spent budget goes to VolumeAttachment creates and few, full status patches instead
// of one patch per attach.
func (p *PriorityLimiter) Saturated() (bool, time.Duration) {
	tokens := p.limiter.Tokens()
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) / float64(p.qps) * float64(time.Second))
}

// CreatesInFlight is how many VolumeAttachment creates a controller keeps in flight to
// spend this budget on creates: qps times an API server's time per create under load
// (createLatency), at least minCreatesInFlight, at most maxCreatesInFlight. Fewer leave the
// budget unspent whenever a create takes longer than the limiter's interval, so creates run
// below the rate an operator gave with --kube-api-qps: at 1000 QPS on a two-core control
// plane, 32 in flight create about 750 a second where 100 keep to the budget's 1000, and the
// volumes are listed no later, the listing waiting for the attacher either way. On a control
// plane with no CPU to spare the first half of a large burst is listed later (the attacher's
// status writes wait behind more creates); `adc controller --creates-in-flight` then sets a
// smaller number.
func (p *PriorityLimiter) CreatesInFlight() int {
	n := int(math.Ceil(float64(p.qps) * createLatency.Seconds()))
	return min(max(n, minCreatesInFlight), maxCreatesInFlight)
}

const (
	createLatency      = 100 * time.Millisecond
	minCreatesInFlight = 4
	// maxCreatesInFlight bounds the workers of a large budget: more than a default API
	// server runs at once for a controller (API Priority and Fairness gives workload-high 98
	// of its 600 seats) would only queue there.
	maxCreatesInFlight = 128
)

func (d door) TryAccept() bool { return d.p.limiter.Allow() }

func (d door) Accept() { _ = d.Wait(context.Background()) }

func (d door) Stop() {}

func (d door) QPS() float32 { return d.p.qps }

// PrioritizedBudget splits one client budget of qps/burst into two rest.Configs that share
// it: normal for everything, and priority for the node status writer. Both speak protobuf to
// the API server, as kube-controller-manager does: it costs the API server and adc less CPU
// than JSON at scale (dynamic clients built from them switch back to JSON themselves). The
// shared limiter is for adc.Options.APIBudget: the controller asks it whether the budget is
// spent.
func PrioritizedBudget(cfg *rest.Config, qps float32, burst int) (normal, priority *rest.Config, budget *PriorityLimiter) {
	p := NewPriorityLimiter(qps, burst)
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	normal, priority = rest.CopyConfig(cfg), rest.CopyConfig(cfg)
	normal.QPS, normal.Burst, normal.RateLimiter = qps, burst, p.Normal()
	priority.QPS, priority.Burst, priority.RateLimiter = qps, burst, p.Priority()
	return normal, priority, p
}
