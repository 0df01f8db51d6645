// Package auditcount counts a controller's API requests from the kube-apiserver's audit log,
// so adc (a binary) and kube-controller-manager (a binary built elsewhere) are counted the
// same way, by the server, without a proxy that would change their transport (HTTP/2 over
// TLS) or cost CPU in the benchmark's own process while it measures.
//
// The controller under test authenticates as its own user; the policy logs only that user's
// requests, one event per request at ResponseComplete (watches complete when the controller
// stops, so the log is read after that). Events carry the time the request was received,
// so one log is split into phases (attach, steady state, detach) by time.
package auditcount

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// User is the user the controller under test authenticates as.
const User = "bench-controller"

// Policy is an audit policy that logs user's requests at Metadata level, once each (at
// ResponseComplete, or Panic), and nothing else.
func Policy(user string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: [%q]
- level: None
`, user)
}

// APIServerFlags are the kube-apiserver flags that audit with the policy file at policy
// into the log file at log: JSON lines, written before each response (blocking), never rotated.
func APIServerFlags(policy, log string) map[string]string {
	return map[string]string{
		"audit-policy-file": policy,
		"audit-log-path":    log,
		"audit-log-format":  "json",
		"audit-log-mode":    "blocking",
		"audit-log-maxsize": "1000000", // MB: without it the log rotates every 100 MB
	}
}

// Request is one audited request.
type Request struct {
	// Verb is the Kubernetes verb (get, list, watch, create, update, patch, delete,
	// deletecollection), or the lowercase HTTP method of a non-resource request.
	Verb string
	// Resource is "nodes", "volumeattachments", ... with "/"+subresource when there is one
	// ("nodes/status"); empty for non-resource requests (discovery, /version, /healthz).
	Resource string
	// Received is when the API server received the request.
	Received time.Time
	// Code is the HTTP status code of the response.
	Code int
	// Latency is how long the API server took, from receiving the request to completing
	// the response (for a watch: how long it was open).
	Latency time.Duration
}

// event is the part of an audit.k8s.io/v1 Event that counting needs.
type event struct {
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// Read parses the audit log at path, and any rotated parts beside it.
func Read(path string) ([]Request, error) {
	ext := filepath.Ext(path)
	parts, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, fmt.Errorf("finding rotated parts of audit log %s: %w", path, err)
	}
	sort.Strings(parts)
	var out []Request
	for _, p := range append(parts, path) {
		reqs, err := readFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, reqs...)
	}
	return out, nil
}

func readFile(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log %s (is kube-apiserver auditing?): %w", path, err)
	}
	defer func() { _ = f.Close() }()
	var out []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log %s line %d: %w", path, line, err)
		}
		r := Request{Verb: e.Verb, Received: e.RequestReceivedTimestamp, Latency: e.StageTimestamp.Sub(e.RequestReceivedTimestamp)}
		if e.ObjectRef != nil && e.ObjectRef.Resource != "" {
			r.Resource = e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				r.Resource += "/" + e.ObjectRef.Subresource
			}
		}
		if e.ResponseStatus != nil {
			r.Code = e.ResponseStatus.Code
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log %s: %w", path, err)
	}
	return out, nil
}

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
		if r.Code >= 400 {
			c.Errors[r.Code]++
			c.ErrorsByRequest[strings.TrimSpace(fmt.Sprintf("%d %s %s", r.Code, r.Verb, r.Resource))]++
		}
		if r.Resource == "" {
			c.NonResource++
			continue
		}
		c.ByVerb[r.Verb]++
		c.ByResource[r.Verb+" "+r.Resource]++
		if r.Verb != "watch" {
			latencies[r.Verb+" "+r.Resource] = append(latencies[r.Verb+" "+r.Resource], r.Latency)
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
