package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node status history as the audit log has it: the kubelet's write, then a controller's
// write that drops one of two volumes, then one that adds it back. The drop is found, in the
// order of resourceVersions (not of the log's lines), and only within its window.
func TestDroppedVolumes(t *testing.T) {
	line := func(id, verb, user, rv, at string, vols ...string) string {
		var names []string
		for _, v := range vols {
			names = append(names, `{"name":"`+v+`","devicePath":""}`)
		}
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1/status","verb":"` + verb + `","user":{"username":"` + user + `"},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"responseObject":{"kind":"Node","metadata":{"name":"n1","resourceVersion":"` + rv + `"},"status":{"volumesAttached":[` + strings.Join(names, ",") + `]}},"requestReceivedTimestamp":"` + at + `","stageTimestamp":"` + at + `"}` + "\n"
	}
	log := line("a", "patch", "kcm", "10", "2026-11-28T10:00:00Z", "v1", "v2") +
		line("c", "patch", "adc", "30", "2026-11-28T10:00:02Z", "v1", "v2") +
		line("b", "patch", "adc", "20", "2026-11-28T10:00:01Z", "v2") +
		// A refused write changes nothing.
		strings.Replace(line("d", "patch", "adc", "25", "2026-11-28T10:00:01.5Z"), `"code":200`, `"code":409`, 1)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := readAuditFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := a.NodeStatusWrites()
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 3 || writes[0].RV != 10 || writes[1].RV != 20 || writes[2].RV != 30 {
		t.Fatalf("writes %+v, want resourceVersions 10, 20, 30", writes)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	dropped := DroppedVolumes(writes, at("2026-11-28T10:00:00Z"), time.Time{})
	if len(dropped) != 1 || dropped[0].Volume != "v1" || dropped[0].Write.Request.User != "adc" || dropped[0].Before.RV != 10 {
		t.Fatalf("dropped %v, want v1 dropped by adc's write of resourceVersion 20", dropped)
	}
	if d := DroppedVolumes(writes, at("2026-11-28T10:00:02Z"), time.Time{}); len(d) != 0 {
		t.Errorf("dropped after the drop's window: %v", d)
	}
}
