// Package auditcount counts a controller's API requests from the kube-apiserver's audit log
// (written and read with internal/auditlog), so adc (a binary) and kube-controller-manager (a
// binary built elsewhere) are counted the same way, by the server, without a proxy that
// would change their transport (HTTP/2 over TLS) or cost CPU in the benchmark's own process
// while it measures.
//
// The controller under test authenticates as its own user; the policy (auditlog.Policy)
// logs only that user's requests, one event per request at ResponseComplete (watches complete when the controller
// stops, so the log is read after that). Events carry the time the request was received,
// so one log is split into phases (attach, steady state, detach) by time.
package auditcount

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/migration-aware/adc/internal/auditlog"
)

// User is the user the controller under test authenticates as.
const User = "bench-controller"

// Request is one audited request, as auditlog.Read returns it.
type Request = auditlog.Request

// Counts are the requests of one phase.
type Counts struct {
	// ByVerb counts resource requests by verb.
	ByVerb map[string]int64
	// ByResource counts resource requests by "verb resource[/subresource]".
	ByResource map[string]int64
	// NonResource counts discovery, /version and health requests.
	NonResource int64
	// Errors counts responses with a code of 400 or more, by code.
	Errors map[int]int64
	// ErrorsByRequest counts them by "code verb resource", e.g. "504 create volumeattachments".
	ErrorsByRequest map[string]int64
	// Latency is the API server's p50 and p99 time to answer, by "verb resource", for
	// requests other than watches: how long the controller waited on the server.
	Latency map[string]Percentiles
}

// Percentiles are the p50 and p99 of a set of durations.
type Percentiles struct{ P50, P99 time.Duration }

// Writes is the number of create, update, patch, delete and deletecollection requests.
func (c Counts) Writes() int64 {
	var n int64
	for _, v := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		n += c.ByVerb[v]
	}
	return n
}

// Total is the number of resource requests.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.ByVerb {
		n += v
	}
	return n
}

// Tally counts the requests received in [from, to).
func Tally(reqs []Request, from, to time.Time) Counts {
	c := Counts{ByVerb: map[string]int64{}, ByResource: map[string]int64{}, Errors: map[int]int64{},
		ErrorsByRequest: map[string]int64{}, Latency: map[string]Percentiles{}}
	latencies := map[string][]time.Duration{}
	for _, r := range reqs {
		if r.Received.Before(from) || !r.Received.Before(to) {
			continue
		}
		res := r.ResourcePath()
		if r.Code >= 400 {
			c.Errors[r.Code]++
			c.ErrorsByRequest[strings.TrimSpace(fmt.Sprintf("%d %s %s", r.Code, r.Verb, res))]++
		}
		if res == "" {
			c.NonResource++
			continue
		}
		c.ByVerb[r.Verb]++
		c.ByResource[r.Verb+" "+res]++
		if r.Verb != "watch" {
			latencies[r.Verb+" "+res] = append(latencies[r.Verb+" "+res], r.Latency)
		}
	}
	for k, d := range latencies {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		c.Latency[k] = Percentiles{P50: rank(d, 50), P99: rank(d, 99)}
	}
	return c
}

// rank is the nearest-rank p-th percentile of sorted d.
func rank(d []time.Duration, p int) time.Duration {
	i := (p*len(d)+99)/100 - 1
	return d[max(0, min(i, len(d)-1))]
}
