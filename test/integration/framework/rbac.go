package framework

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/internal/controlplane"
)

// AuditPolicy is the audit policy of suites that check a controller's requests: every
// request (the controller may impersonate its user, which the policy cannot select), at
// Metadata level.
const AuditPolicy = auditlog.PolicyAll

// ReadAudit reads the control plane's audit log; the control plane must have been started
// with an AuditPolicy.
func ReadAudit(cp *ControlPlane) ([]auditlog.Request, error) {
	if cp.AuditLogPath == "" {
		return nil, fmt.Errorf("the control plane keeps no audit log: start it with an AuditPolicy")
	}
	return auditlog.Read(cp.AuditLogPath)
}

// CheckNoForbidden returns an error listing every request of user the API server answered
// 403 Forbidden (user, verb, resource, object), except requests whose User-Agent starts with
// one of ignoreAgents: a test's own probes of what the user may not do.
func CheckNoForbidden(reqs []auditlog.Request, user string, ignoreAgents ...string) error {
	denied := auditlog.Forbidden(reqs, user, ignoreAgents...)
	if len(denied) == 0 {
		return nil
	}
	// One line per request and client, with how often and when: a controller retries.
	type seen struct {
		n           int
		first, last time.Time
	}
	var keys []string
	byKey := map[string]*seen{}
	for _, r := range denied {
		k := fmt.Sprintf("%s (user agent %q)", r, r.UserAgent)
		if byKey[k] == nil {
			byKey[k] = &seen{first: r.Received}
			keys = append(keys, k)
		}
		byKey[k].n++
		byKey[k].last = r.Received
	}
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		s := byKey[k]
		when := "at " + s.first.Format("15:04:05.000")
		if s.n > 1 {
			when = fmt.Sprintf("%d times, %s to %s", s.n, s.first.Format("15:04:05.000"), s.last.Format("15:04:05.000"))
		}
		lines = append(lines, fmt.Sprintf("  %s, %s", k, when))
	}
	return fmt.Errorf("the API server refused %d requests of %s (403 Forbidden); its RBAC lacks them:\n%s",
		len(denied), user, strings.Join(lines, "\n"))
}

// ReceivedOutside splits requests into those the API server received outside every window
// and those it received within one, e.g. while it was not ready after a restart
// (ControlPlane.NotReady), when its authorizer may refuse what RBAC grants.
func ReceivedOutside(reqs []auditlog.Request, windows []controlplane.Window) (outside, within []auditlog.Request) {
	for _, r := range reqs {
		if slices.ContainsFunc(windows, func(w controlplane.Window) bool { return w.Contains(r.Received) }) {
			within = append(within, r)
			continue
		}
		outside = append(outside, r)
	}
	return outside, within
}

// Call is a kind of request as RBAC authorizes it: verb, API group, resource (with
// "/subresource"), and the namespace and name the authorizer sees (none for a create, a
// list or a watch that selects no single object).
type Call struct {
	Verb, APIGroup, Resource, Namespace, Name string
}

// String reads like an RBAC rule: "get volumeattachments.storage.k8s.io csi-1".
func (c Call) String() string {
	s := c.Verb + " " + c.Resource
	if c.APIGroup != "" {
		res, sub, _ := strings.Cut(c.Resource, "/")
		s = c.Verb + " " + res + "." + c.APIGroup
		if sub != "" {
			s += "/" + sub
		}
	}
	if obj := strings.Trim(c.Namespace+"/"+c.Name, "/"); obj != "" {
		s += " " + obj
	}
	return s
}

// CallsOf returns the distinct resource requests user made, as RBAC authorizes them, sorted,
// and the distinct non-resource paths (discovery, /version) it requested, leaving out
// requests whose User-Agent starts with one of ignoreAgents. keepName says for which calls
// the object's name matters (a rule names resources); other calls keep only their namespace,
// so that one call stands for every object of its kind.
func CallsOf(reqs []auditlog.Request, user string, keepName func(Call) bool, ignoreAgents ...string) (calls []Call, nonResource []string) {
	seenCall, seenPath := map[Call]bool{}, map[string]bool{}
	for _, r := range reqs {
		if r.User != user || slices.ContainsFunc(ignoreAgents, func(a string) bool { return strings.HasPrefix(r.UserAgent, a) }) {
			continue
		}
		if r.Resource == "" {
			path, _, _ := strings.Cut(r.RequestURI, "?")
			if !seenPath[path] {
				seenPath[path] = true
				nonResource = append(nonResource, path)
			}
			continue
		}
		c := Call{Verb: r.Verb, APIGroup: r.APIGroup, Resource: r.ResourcePath(), Namespace: r.Namespace, Name: r.Name}
		if c.Verb == "create" && r.Subresource == "" {
			// The authorizer sees a create of the collection; the audit log names the object.
			c.Name = ""
		}
		if keepName == nil || !keepName(c) {
			c.Name = ""
		}
		if !seenCall[c] {
			seenCall[c] = true
			calls = append(calls, c)
		}
	}
	slices.SortFunc(calls, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.APIGroup, b.APIGroup), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(nonResource)
	return calls, nonResource
}

// RuleAllows reports whether an RBAC rule allows the call, as the RBAC authorizer decides
// it: verb, API group and resource (or "*"; "res/*" and "*/sub" for subresources), and the
// rule's resourceNames, if it has any, must include the call's name.
func RuleAllows(rule rbacv1.PolicyRule, c Call) bool {
	if !matches(rule.Verbs, c.Verb) || !matches(rule.APIGroups, c.APIGroup) {
		return false
	}
	res, sub, hasSub := strings.Cut(c.Resource, "/")
	resourceOK := slices.ContainsFunc(rule.Resources, func(r string) bool {
		switch {
		case r == rbacv1.ResourceAll || r == c.Resource:
			return true
		case hasSub && r == res+"/*":
			return true
		case hasSub && r == "*/"+sub:
			return true
		}
		return false
	})
	if !resourceOK {
		return false
	}
	return len(rule.ResourceNames) == 0 || (c.Name != "" && slices.Contains(rule.ResourceNames, c.Name))
}

// matches reports whether values holds v or "*".
func matches(values []string, v string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, v)
}
