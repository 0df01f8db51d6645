package faultproxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// exchange carries what serveHTTP decided about a request to modifyResponse, through the
// request's context.
type exchange struct {
	t      target
	ctx    context.Context
	cancel context.CancelFunc
	gated  bool   // a list or watch of a collection: its body goes through a stream
	epoch  uint64 // the resource's epoch when it was admitted
	stream *stream
}

type exchangeKey struct{}

// serveHTTP records the request, applies the resource's faults to lists and watches of
// collections and forwards everything else untouched.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "faultproxy: closing")
		return
	}
	defer p.wg.Done()
	t := classify(r, time.Now())
	p.record(t.Request)

	ctx, cancel := context.WithCancel(r.Context())
	ex := &exchange{t: t, ctx: ctx, cancel: cancel}
	defer func() { // also when the reverse proxy aborts the response with a panic
		cancel()
		if ex.stream != nil {
			<-ex.stream.done
		}
	}()
	if t.collection {
		epoch, outcome := p.admit(ctx, w, t)
		switch outcome {
		case answered:
			return
		case abandoned:
			// The client left or the proxy is closing: drop the connection rather than let
			// net/http answer an empty 200 to a request that was never forwarded.
			panic(http.ErrAbortHandler)
		}
		ex.gated, ex.epoch = true, epoch
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, exchangeKey{}, ex)))
}

// admission is how admit ended.
type admission int

const (
	forward   admission = iota // send it to the API server
	answered                   // admit answered 503 or 410 itself
	abandoned                  // the client left, or the proxy is closing, while it was held
)

// admit holds a list or watch while its resource is frozen (or delayed), then says whether
// to forward it, with the epoch its stream belongs to.
func (p *Proxy) admit(ctx context.Context, w http.ResponseWriter, t target) (uint64, admission) {
	logger := p.logger.WithValues("verb", t.Verb, "resource", t.Resource, "namespace", t.Namespace)
	for {
		v, epoch, wait, changed := p.faults.admit(t, t.Time, time.Now())
		switch v {
		case pass:
			return epoch, forward
		case unavailable:
			logger.V(3).Info("Answering 503: the resource is cut")
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				fmt.Sprintf("faultproxy: %s is cut", t.Resource))
			return 0, answered
		case gone:
			logger.V(3).Info("Answering 410: the resource is expired")
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired,
				fmt.Sprintf("too old resource version (faultproxy: %s expired)", t.Resource))
			return 0, answered
		}
		var fire <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			logger.V(3).Info("Held request ended by its client or by Close")
			return 0, abandoned
		}
	}
}

// modifyResponse routes the body of an admitted list or watch through a stream, which
// applies the resource's faults to it. Errors from the API server pass as they are.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	ex, _ := resp.Request.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil || !ex.gated || resp.StatusCode != http.StatusOK {
		return nil
	}
	ex.stream = newStream(ex.ctx, ex.cancel, p.faults, ex.t.Resource, ex.epoch, ex.t.Watch, resp.Body)
	resp.Body = ex.stream
	return nil
}

// proxyError answers a request the API server could not be asked, unless its client has gone.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	// Tests stop the API server on purpose (restarts); the client sees the 502 and retries.
	p.logger.V(2).Info("Forwarding to the API server failed", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
	writeStatus(w, http.StatusBadGateway, metav1.StatusReasonServiceUnavailable,
		fmt.Sprintf("faultproxy: forwarding to the API server: %v", err))
}
