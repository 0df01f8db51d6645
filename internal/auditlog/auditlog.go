// Package auditlog turns a kube-apiserver's audit log on and reads it back: which requests
// a client made and how the server answered them, as the server saw them, without a proxy
// that would change the client's transport. The benchmarks count a controller's requests
// with it (test/bench/internal/auditcount); the integration suites check that adc, running
// under the RBAC it ships with, is never refused (403) and uses only what its role grants.
package auditlog

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

// Policy is an audit policy that logs user's requests at Metadata level, once each (at
// ResponseComplete, or Panic), and nothing else. The policy is evaluated on the user that
// authenticated, before impersonation: requests made by impersonating user are not logged.
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

// PolicyAll is an audit policy that logs every request at Metadata level, except the API
// server's own loopback requests (user system:apiserver). A long-running request (a watch)
// is logged when its response starts and again when it completes, so it shows in a log read
// while it is still open; Read keeps one Request per request. Use it when the client under
// test impersonates its user (the policy only sees the user that authenticated), or when
// several users matter.
const PolicyAll = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
`

// Bodies names resources (optionally subresources, "nodes/status") of one API group whose
// writes PolicyAllWithBodies logs with their bodies.
type Bodies struct {
	// Group is the API group, "" for the core group.
	Group string
	// Resources are resource names as RBAC rules spell them: "volumeattachments",
	// "nodes/status".
	Resources []string
}

// writeVerbs are the verbs that change objects.
const writeVerbs = `[create, update, patch, delete, deletecollection]`

// PolicyAllWithBodies is PolicyAll, except that the writes (create, update, patch, delete) of
// the resources bodies names are logged at RequestResponse level: Request.RequestObject and
// Request.ResponseObject hold what the client sent and the object the server answered with
// (for a write of nodes/status, the whole Node after it), so a test can follow every revision
// a write made. With no bodies it is PolicyAll.
func PolicyAllWithBodies(bodies ...Bodies) string {
	if len(bodies) == 0 {
		return PolicyAll
	}
	var b strings.Builder
	b.WriteString(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: RequestResponse
  verbs: ` + writeVerbs + `
  resources:
`)
	for _, r := range bodies {
		quoted := make([]string, len(r.Resources))
		for i, res := range r.Resources {
			quoted[i] = fmt.Sprintf("%q", res)
		}
		fmt.Fprintf(&b, "  - group: %q\n    resources: [%s]\n", r.Group, strings.Join(quoted, ", "))
	}
	b.WriteString("- level: Metadata\n")
	return b.String()
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
	// User is the user the request acted as: the impersonated user when the client
	// impersonated one, else the user that authenticated.
	User string
	// AuthenticatedUser is the user that authenticated (the impersonator, when User is
	// impersonated).
	AuthenticatedUser string
	// UserAgent is the client's User-Agent header.
	UserAgent string
	// Verb is the Kubernetes verb (get, list, watch, create, update, patch, delete,
	// deletecollection), or the lowercase HTTP method of a non-resource request.
	Verb string
	// APIGroup is the resource's API group, "" for the core group.
	APIGroup string
	// Resource is "nodes", "volumeattachments", ...; empty for non-resource requests
	// (discovery, /version, /healthz).
	Resource string
	// Subresource is "status", "binding", ... for subresource requests.
	Subresource string
	// Namespace and Name are the object's, when the request names them (a create's Name is
	// the created object's, which the authorizer did not see).
	Namespace, Name string
	// RequestURI is the path and query of the request.
	RequestURI string
	// Received is when the API server received the request.
	Received time.Time
	// Code is the HTTP status code of the response.
	Code int
	// Latency is how long the API server took, from receiving the request to completing
	// the response (for a watch: how long it was open; for one still open when the log was
	// read: until its response started).
	Latency time.Duration
	// RequestObject and ResponseObject are the request's body and the server's answer (JSON)
	// when the policy logged the request at Request or RequestResponse level
	// (PolicyAllWithBodies); nil otherwise.
	RequestObject, ResponseObject json.RawMessage
}

// ResourcePath is Resource with "/"+Subresource when there is one ("nodes/status"), as RBAC
// rules name it.
func (r Request) ResourcePath() string {
	if r.Subresource == "" {
		return r.Resource
	}
	return r.Resource + "/" + r.Subresource
}

// String describes the request for a failure message: code, user, verb, resource and
// object, e.g. `403 system:serviceaccount:adc-system:adc get volumeattachments.storage.k8s.io csi-1a2b`.
func (r Request) String() string {
	what := r.RequestURI
	if r.Resource != "" {
		what = r.ResourcePath()
		if r.APIGroup != "" {
			what = r.Resource + "." + r.APIGroup
			if r.Subresource != "" {
				what += "/" + r.Subresource
			}
		}
		if obj := strings.Trim(r.Namespace+"/"+r.Name, "/"); obj != "" {
			what += " " + obj
		}
	}
	return fmt.Sprintf("%d %s %s %s", r.Code, r.User, r.Verb, what)
}

// event is the part of an audit.k8s.io/v1 Event that the readers need.
type event struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
	RequestObject            json.RawMessage `json:"requestObject"`
	ResponseObject           json.RawMessage `json:"responseObject"`
}

// Read parses the audit log at path, and any rotated parts beside it, into one Request per
// request, in the order the log first shows them. A request logged at more than one stage
// (ResponseStarted, then ResponseComplete) is read from its last.
func Read(path string) ([]Request, error) {
	ext := filepath.Ext(path)
	parts, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, fmt.Errorf("finding rotated parts of audit log %s: %w", path, err)
	}
	sort.Strings(parts)
	var out []Request
	seen := map[string]int{} // auditID -> index in out
	for _, p := range append(parts, path) {
		if err := readFile(p, &out, seen); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readFile(path string, out *[]Request, seen map[string]int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening audit log %s (is kube-apiserver auditing?): %w", path, err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("audit log %s line %d: %w", path, line, err)
		}
		r := Request{
			User: e.User.Username, AuthenticatedUser: e.User.Username, UserAgent: e.UserAgent,
			Verb: e.Verb, RequestURI: e.RequestURI,
			Received: e.RequestReceivedTimestamp, Latency: e.StageTimestamp.Sub(e.RequestReceivedTimestamp),
			RequestObject: e.RequestObject, ResponseObject: e.ResponseObject,
		}
		if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
			r.User = e.ImpersonatedUser.Username
		}
		if o := e.ObjectRef; o != nil {
			r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name = o.APIGroup, o.Resource, o.Subresource, o.Namespace, o.Name
		}
		if e.ResponseStatus != nil {
			r.Code = e.ResponseStatus.Code
		}
		if i, ok := seen[e.AuditID]; ok && e.AuditID != "" {
			(*out)[i] = r
			continue
		}
		if e.AuditID != "" {
			seen[e.AuditID] = len(*out)
		}
		*out = append(*out, r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading audit log %s: %w", path, err)
	}
	return nil
}

// Forbidden returns the requests of user that the API server answered 403 Forbidden, except
// those whose User-Agent starts with one of ignoreAgents (a test's own probes of what the user
// may not do).
func Forbidden(reqs []Request, user string, ignoreAgents ...string) []Request {
	var out []Request
	for _, r := range reqs {
		if r.User != user || r.Code != 403 || hasAnyPrefix(r.UserAgent, ignoreAgents) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
