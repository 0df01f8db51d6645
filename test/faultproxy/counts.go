package faultproxy

import (
	"slices"
	"time"
)

// record remembers req for Requests and Count.
func (p *Proxy) record(req Request) {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	p.requests = append(p.requests, req)
}

// Requests returns every request the proxy saw since it started or since the last
// ResetCounts, in arrival order, so a test can check what a client asked and when.
func (p *Proxy) Requests() []Request {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	return slices.Clone(p.requests)
}

// Count returns how many requests with this Kubernetes verb went to resource, so a test can
// assert on API call budgets, e.g. Count("get", "nodes") for GETs of single Nodes. resource
// "nodes" counts only requests without a subresource; "nodes/status" counts the status
// subresource. Streaming lists count as "watch", not "list".
func (p *Proxy) Count(verb, resource string) int {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	n := 0
	for _, r := range p.requests {
		name := r.Resource
		if r.Subresource != "" {
			name += "/" + r.Subresource
		}
		if r.Verb == verb && name == resource {
			n++
		}
	}
	return n
}

// ResetCounts forgets the requests seen so far, so a test can count the calls of one phase.
func (p *Proxy) ResetCounts() {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	p.requests = nil
}

// RelistedSince reports whether a client asked for a fresh list of the resource (a plain
// list, or a streaming list: a watch with sendInitialEvents=true) at or after since, so a test
// can heal an expired resource only once its informer is relisting.
func (p *Proxy) RelistedSince(resource string, since time.Time) bool {
	for _, r := range p.Requests() {
		if r.Resource == resource && r.Subresource == "" && !r.Time.Before(since) &&
			(r.Verb == "list" || (r.Watch && r.SendInitialEvents)) {
			return true
		}
	}
	return false
}
