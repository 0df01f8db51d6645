package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/preflight"
	"github.com/migration-aware/adc/pkg/server"
)

const hostile = "<script>alert(1)</script>"

// checksServer serves the preflight and explain pages from fixed reports; the sources record
// what they were asked.
func checksServer(t *testing.T, asked *[]string) *httptest.Server {
	t.Helper()
	srv := server.New()
	pre := func(_ context.Context, o preflight.Options) (preflight.Report, error) {
		*asked = append(*asked, fmt.Sprintf("preflight %v to=%q", o.Plugins, o.To))
		return preflight.Report{GeneratedAt: time.Unix(0, 0), Steps: []preflight.Step{{Plugin: "kubernetes.io/gce-pd", From: migration.ModeOn, To: migration.ModeComplete}},
			Findings: []preflight.Finding{{Severity: preflight.Blocks, Check: preflight.CheckDriverNotRegistered, Plugin: "kubernetes.io/gce-pd",
				Object: preflight.Object{Kind: "CSINode", Name: hostile}, Why: "why " + hostile, Fix: "fix"}}, Blocking: 1}, nil
	}
	exp := func(_ context.Context, tg explain.Target) (explain.Report, error) {
		*asked = append(*asked, "explain "+tg.String())
		if tg.Name == "missing" {
			return explain.Report{}, fmt.Errorf("pod %s %w", tg, explain.ErrNotFound)
		}
		return explain.Report{Target: tg, Pods: []explain.Pod{{Namespace: tg.Namespace, Name: tg.Name, Node: "n1",
			Volumes: []explain.Volume{{Name: "data", Mechanism: migration.MechanismWait, Reason: hostile, Next: "held"}}}}}, nil
	}
	dashboard.RegisterChecks(srv, pre, exp)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func TestChecksPages(t *testing.T) {
	var asked []string
	ts := checksServer(t, &asked)
	for _, tc := range []struct {
		name, path string
		status     int
		asked      string
		has        []string
	}{
		{"preflight page of one plugin's step", dashboard.PreflightPath + "?plugin=gce-pd&to=complete", http.StatusOK, `preflight [kubernetes.io/gce-pd] to="complete"`,
			[]string{`id="verdict" data-ok="false"`, "Not safe: 1 findings block", "&lt;script&gt;alert(1)&lt;/script&gt;", `href="` + dashboard.PreflightAPIPath + `?plugin=kubernetes.io%2Fgce-pd&amp;to=complete"`}},
		{"preflight JSON of every plugin's next step", dashboard.PreflightAPIPath, http.StatusOK, `preflight [] to=""`, []string{`"check": "driver-not-registered"`}},
		{"preflight with an unknown step is refused", dashboard.PreflightPath + "?to=finished", http.StatusBadRequest, "", []string{`unknown step "finished"`}},
		{"preflight with an unknown plugin is refused", dashboard.PreflightAPIPath + "?plugin=rbd", http.StatusBadRequest, "", []string{`unknown plugin "rbd"`}},
		{"explain page of a pod", dashboard.ExplainPath + "?pod=db/pg-0", http.StatusOK, "explain pod db/pg-0", []string{`data-mechanism="wait"`, "&lt;script&gt;"}},
		{"explain JSON of a volume", dashboard.ExplainAPIPath + "?pv=pv-1", http.StatusOK, "explain pv pv-1", []string{`"kind": "pv"`}},
		{"explain of a pod that does not exist is 404", dashboard.ExplainAPIPath + "?pod=db/missing", http.StatusNotFound, "explain pod db/missing", []string{"not found"}},
		{"explain without a target is refused", dashboard.ExplainPath, http.StatusBadRequest, "", []string{"?pod=NAMESPACE/NAME or ?pv=NAME"}},
		{"explain of a badly named pod is refused", dashboard.ExplainPath + "?pod=nonamespace", http.StatusBadRequest, "", []string{"NAMESPACE/NAME"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			resp, body := get(t, ts.URL+tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("GET %s = %d, want %d: %s", tc.path, resp.StatusCode, tc.status, body)
			}
			if got := strings.Join(asked, ";"); got != tc.asked {
				t.Errorf("source asked %q, want %q", got, tc.asked)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("GET %s lacks %q:\n%s", tc.path, s, body)
				}
			}
			if strings.Contains(body, hostile) {
				t.Errorf("GET %s writes cluster data unescaped", tc.path)
			}
			if strings.Contains(tc.path, "api/v1/") && tc.status == http.StatusOK && !json.Valid([]byte(body)) {
				t.Errorf("GET %s is not JSON", tc.path)
			}
		})
	}
}
