package auditlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Lines as kube-apiserver 1.36 writes them at Metadata level (trimmed of fields not read):
// a status patch, a create refused as AlreadyExists, a discovery request, a GET refused to an
// impersonated ServiceAccount, and a watch logged when it started and again when it ended.
const sample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1/status","verb":"patch","user":{"username":"bench-controller"},"userAgent":"adc/v0","objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:01.000100Z","stageTimestamp":"2026-11-23T10:00:01.002000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c","stage":"ResponseComplete","requestURI":"/apis/storage.k8s.io/v1/volumeattachments","verb":"create","user":{"username":"bench-controller"},"objectRef":{"resource":"volumeattachments","name":"x","apiGroup":"storage.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"AlreadyExists","code":409},"requestReceivedTimestamp":"2026-11-23T10:00:03Z","stageTimestamp":"2026-11-23T10:00:03Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d","stage":"ResponseComplete","requestURI":"/api?timeout=32s","verb":"get","user":{"username":"bench-controller"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:00Z","stageTimestamp":"2026-11-23T10:00:00Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"f","stage":"ResponseComplete","requestURI":"/apis/storage.k8s.io/v1/volumeattachments/csi-1","verb":"get","user":{"username":"envtest-admin","groups":["system:masters"]},"impersonatedUser":{"username":"system:serviceaccount:adc-system:adc"},"userAgent":"adc-controller","objectRef":{"resource":"volumeattachments","name":"csi-1","apiGroup":"storage.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"Forbidden","code":403},"requestReceivedTimestamp":"2026-11-23T10:00:05Z","stageTimestamp":"2026-11-23T10:00:05Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"e","stage":"ResponseStarted","requestURI":"/api/v1/namespaces/ns1/pods?watch=true","verb":"watch","user":{"username":"bench-controller"},"objectRef":{"resource":"pods","namespace":"ns1","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:04Z","stageTimestamp":"2026-11-23T10:00:04.5Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"e","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns1/pods?watch=true","verb":"watch","user":{"username":"bench-controller"},"objectRef":{"resource":"pods","namespace":"ns1","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:04Z","stageTimestamp":"2026-11-23T10:09:00Z"}
`

func readSample(t *testing.T, content string) []Request {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func TestRead(t *testing.T) {
	reqs := readSample(t, sample)
	want := []string{
		"200 bench-controller patch nodes/status n1",
		"409 bench-controller create volumeattachments.storage.k8s.io x",
		"200 bench-controller get /api?timeout=32s",
		"403 system:serviceaccount:adc-system:adc get volumeattachments.storage.k8s.io csi-1",
		"200 bench-controller watch pods ns1",
	}
	if len(reqs) != len(want) {
		t.Fatalf("Read returned %d requests, want %d (one per auditID): %v", len(reqs), len(want), reqs)
	}
	for i, w := range want {
		if got := reqs[i].String(); got != w {
			t.Errorf("request %d = %q, want %q", i, got, w)
		}
	}
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"latency of a patch", reqs[0].Latency, 1900 * time.Microsecond},
		{"a watch read from its last stage", reqs[4].Latency, 8*time.Minute + 56*time.Second},
		{"the impersonator", reqs[3].AuthenticatedUser, "envtest-admin"},
		{"user agent", reqs[3].UserAgent, "adc-controller"},
		{"group of a core resource", reqs[0].APIGroup, ""},
		{"resource path of a subresource", reqs[0].ResourcePath(), "nodes/status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestReadRotatedParts(t *testing.T) {
	dir := t.TempDir()
	lines := strings.SplitAfter(sample, "\n")
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-11-23T10-00-02.000.log"), []byte(strings.Join(lines[:2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), []byte(strings.Join(lines[2:], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs, err := Read(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 5 || reqs[0].Verb != "patch" {
		t.Errorf("Read = %v, want the rotated part first, 5 requests", reqs)
	}
}

func TestForbidden(t *testing.T) {
	reqs := readSample(t, sample)
	for _, tc := range []struct {
		name   string
		user   string
		ignore []string
		want   int
	}{
		{"the impersonated user's 403", "system:serviceaccount:adc-system:adc", nil, 1},
		{"not the impersonator's", "envtest-admin", nil, 0},
		{"a probe's 403 ignored by user agent", "system:serviceaccount:adc-system:adc", []string{"adc-con"}, 0},
		{"nothing refused", "bench-controller", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Forbidden(reqs, tc.user, tc.ignore...); len(got) != tc.want {
				t.Errorf("Forbidden = %v, want %d", got, tc.want)
			}
		})
	}
}

func TestPolicyNamesUser(t *testing.T) {
	if p := Policy("someone"); !strings.Contains(p, `users: ["someone"]`) {
		t.Errorf("policy does not name the user:\n%s", p)
	}
}

func TestPolicyAllWithBodies(t *testing.T) {
	if got := PolicyAllWithBodies(); got != PolicyAll {
		t.Errorf("PolicyAllWithBodies() = %q, want PolicyAll", got)
	}
	got := PolicyAllWithBodies(Bodies{Resources: []string{"nodes/status"}}, Bodies{Group: "storage.k8s.io", Resources: []string{"volumeattachments"}})
	for _, want := range []string{
		"- level: None\n  users: [\"system:apiserver\"]\n- level: RequestResponse\n  verbs: [create, update, patch, delete, deletecollection]\n",
		"  - group: \"\"\n    resources: [\"nodes/status\"]\n",
		"  - group: \"storage.k8s.io\"\n    resources: [\"volumeattachments\"]\n- level: Metadata\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("policy lacks %q:\n%s", want, got)
		}
	}
}

func TestReadBodies(t *testing.T) {
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"b","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1/status","verb":"patch","user":{"username":"u"},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"status":{}},"responseObject":{"kind":"Node","metadata":{"name":"n1","resourceVersion":"7"}},"requestReceivedTimestamp":"2026-11-23T10:00:01Z","stageTimestamp":"2026-11-23T10:00:01Z"}` + "\n"
	reqs := readSample(t, line)
	if len(reqs) != 1 {
		t.Fatalf("Read returned %d requests, want 1", len(reqs))
	}
	if got := string(reqs[0].RequestObject); got != `{"status":{}}` {
		t.Errorf("RequestObject = %s", got)
	}
	if got := string(reqs[0].ResponseObject); got != `{"kind":"Node","metadata":{"name":"n1","resourceVersion":"7"}}` {
		t.Errorf("ResponseObject = %s", got)
	}
	if sampleReqs := readSample(t, sample); sampleReqs[0].ResponseObject != nil {
		t.Errorf("a Metadata-level request has a ResponseObject: %s", sampleReqs[0].ResponseObject)
	}
}
