package framework

import (
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/internal/controlplane"
)

func TestRuleAllows(t *testing.T) {
	leases := rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"adc"}, Verbs: []string{"get", "update"}}
	for _, tc := range []struct {
		name string
		rule rbacv1.PolicyRule
		call Call
		want bool
	}{
		{"verb, group and resource", rbacv1.PolicyRule{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}, Verbs: []string{"list", "watch"}},
			Call{Verb: "watch", APIGroup: "storage.k8s.io", Resource: "volumeattachments"}, true},
		{"another verb", rbacv1.PolicyRule{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}, Verbs: []string{"list", "watch"}},
			Call{Verb: "get", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "csi-1"}, false},
		{"another group", rbacv1.PolicyRule{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csidrivers"}, Verbs: []string{"list"}},
			Call{Verb: "list", APIGroup: "csi.storage.k8s.io", Resource: "csidrivers"}, false},
		{"the core group", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
			Call{Verb: "get", Resource: "nodes", Name: "n1"}, true},
		{"a resource does not grant its subresource", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"patch"}},
			Call{Verb: "patch", Resource: "nodes/status", Name: "n1"}, false},
		{"a subresource", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
			Call{Verb: "patch", Resource: "nodes/status", Name: "n1"}, true},
		{"res/*", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/*"}, Verbs: []string{"patch"}},
			Call{Verb: "patch", Resource: "nodes/status"}, true},
		{"*/sub", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*/status"}, Verbs: []string{"patch"}},
			Call{Verb: "patch", Resource: "nodes/status"}, true},
		{"wildcards", rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list", "watch"}},
			Call{Verb: "list", APIGroup: "csi.storage.k8s.io", Resource: "csinodeinfos"}, true},
		{"a named resource", leases, Call{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "adc-system", Name: "adc"}, true},
		{"another name", leases, Call{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "adc-system", Name: "kcm"}, false},
		{"no name against named resources", leases, Call{Verb: "get", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "adc-system"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.rule, tc.call); got != tc.want {
				t.Errorf("RuleAllows(%+v, %s) = %v, want %v", tc.rule, tc.call, got, tc.want)
			}
		})
	}
}

func TestCallsOf(t *testing.T) {
	const sa = "system:serviceaccount:adc-system:adc"
	reqs := []auditlog.Request{
		{User: sa, Verb: "create", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "csi-1"},
		{User: sa, Verb: "create", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "csi-2"},
		{User: sa, Verb: "get", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "adc-system", Name: "adc"},
		{User: sa, Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1"},
		{User: sa, Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n2"},
		{User: sa, Verb: "get", RequestURI: "/apis?timeout=32s"},
		{User: sa, Verb: "create", Resource: "secrets", Namespace: "ns", UserAgent: "probe/1", Code: 403},
		{User: "admin", Verb: "delete", Resource: "pods", Namespace: "ns", Name: "p"},
	}
	keepLeaseNames := func(c Call) bool { return c.Resource == "leases" }
	calls, paths := CallsOf(reqs, sa, keepLeaseNames, "probe/")
	var got []string
	for _, c := range calls {
		got = append(got, c.String())
	}
	want := []string{"get leases.coordination.k8s.io adc-system/adc", "create volumeattachments.storage.k8s.io", "patch nodes/status"}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if !slices.Equal(paths, []string{"/apis"}) {
		t.Errorf("non-resource paths = %q, want [/apis]", paths)
	}
}

func TestCheckNoForbidden(t *testing.T) {
	const sa = "system:serviceaccount:adc-system:adc"
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	reqs := []auditlog.Request{
		{User: sa, Verb: "get", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "csi-1", Code: 403, UserAgent: "adc-controller", Received: at},
		{User: sa, Verb: "get", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "csi-1", Code: 403, UserAgent: "adc-controller", Received: at.Add(time.Second)},
		{User: sa, Verb: "create", Resource: "secrets", Namespace: "ns", Code: 403, UserAgent: "probe/1", Received: at},
		{User: sa, Verb: "list", Resource: "pods", Code: 200, Received: at},
	}
	err := CheckNoForbidden(reqs, sa, "probe/")
	want := "403 " + sa + ` get volumeattachments.storage.k8s.io csi-1 (user agent "adc-controller"), 2 times, 10:00:00.000 to 10:00:01.000`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secrets") {
		t.Errorf("CheckNoForbidden = %v, want the VolumeAttachment GETs only: %s", err, want)
	}
	if err := CheckNoForbidden(reqs[2:], sa, "probe/"); err != nil {
		t.Errorf("CheckNoForbidden without refusals = %v", err)
	}
}

func TestReceivedOutside(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	reqs := []auditlog.Request{{Verb: "before", Received: at}, {Verb: "from", Received: at.Add(time.Second)},
		{Verb: "within", Received: at.Add(1500 * time.Millisecond)}, {Verb: "to", Received: at.Add(2 * time.Second)},
		{Verb: "open", Received: at.Add(time.Minute)}}
	for _, tc := range []struct {
		name            string
		windows         []controlplane.Window
		outside, within string
	}{
		{"no windows", nil, "before from within to open", ""},
		{"a closed window holds From, not To", []controlplane.Window{{From: at.Add(time.Second), To: at.Add(2 * time.Second)}}, "before to open", "from within"},
		{"an open window", []controlplane.Window{{From: at.Add(30 * time.Second)}}, "before from within to", "open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside, within := ReceivedOutside(reqs, tc.windows)
			verbs := func(rs []auditlog.Request) string {
				var v []string
				for _, r := range rs {
					v = append(v, r.Verb)
				}
				return strings.Join(v, " ")
			}
			if verbs(outside) != tc.outside || verbs(within) != tc.within {
				t.Errorf("outside %q, within %q; want %q, %q", verbs(outside), verbs(within), tc.outside, tc.within)
			}
		})
	}
}
