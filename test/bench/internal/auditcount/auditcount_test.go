package auditcount

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migration-aware/adc/internal/auditlog"
)

// Lines as kube-apiserver 1.36 writes them at Metadata level (trimmed of fields not read).
const sample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1/status","verb":"patch","user":{"username":"bench-controller"},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:01.000100Z","stageTimestamp":"2026-11-23T10:00:01.002000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b","stage":"ResponseComplete","requestURI":"/apis/storage.k8s.io/v1/volumeattachments","verb":"create","user":{"username":"bench-controller"},"objectRef":{"resource":"volumeattachments","apiGroup":"storage.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-23T10:00:02Z","stageTimestamp":"2026-11-23T10:00:02.1Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c","stage":"ResponseComplete","requestURI":"/apis/storage.k8s.io/v1/volumeattachments/x","verb":"create","user":{"username":"bench-controller"},"objectRef":{"resource":"volumeattachments","name":"x","apiGroup":"storage.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"AlreadyExists","code":409},"requestReceivedTimestamp":"2026-11-23T10:00:03Z","stageTimestamp":"2026-11-23T10:00:03Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d","stage":"ResponseComplete","requestURI":"/api?timeout=32s","verb":"get","user":{"username":"bench-controller"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:00Z","stageTimestamp":"2026-11-23T10:00:00Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"e","stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"bench-controller"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-23T10:00:04Z","stageTimestamp":"2026-11-23T10:09:00Z"}
`

func TestReadAndTally(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs, err := auditlog.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	for _, tc := range []struct {
		name                    string
		from, to                string
		total, writes, nonRes   int64
		verb                    string
		wantVerb                int64
		resource                string
		wantResource, conflicts int64
	}{
		{"everything", "2026-11-23T09:00:00Z", "2026-11-23T11:00:00Z", 4, 3, 1, "create", 2, "patch nodes/status", 1, 1},
		// A watch counts when it was opened, not when it ended.
		{"one phase", "2026-11-23T10:00:01Z", "2026-11-23T10:00:03Z", 2, 2, 0, "watch", 0, "create volumeattachments", 1, 0},
		{"watch opened", "2026-11-23T10:00:04Z", "2026-11-23T10:00:05Z", 1, 0, 0, "watch", 1, "watch pods", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Tally(reqs, at(tc.from), at(tc.to))
			if tc.name == "everything" {
				if got := c.Latency["patch nodes/status"]; got.P50 != 1900*time.Microsecond || got.P99 != got.P50 {
					t.Errorf("patch latency = %+v, want 1.9ms", got)
				}
				if _, ok := c.Latency["watch pods"]; ok {
					t.Error("a watch's latency counted")
				}
			}
			if c.Total() != tc.total || c.Writes() != tc.writes || c.NonResource != tc.nonRes ||
				c.ByVerb[tc.verb] != tc.wantVerb || c.ByResource[tc.resource] != tc.wantResource || c.Errors[409] != tc.conflicts ||
				c.ErrorsByRequest["409 create volumeattachments"] != tc.conflicts {
				t.Errorf("Tally = %+v (total %d, writes %d)", c, c.Total(), c.Writes())
			}
		})
	}
}
