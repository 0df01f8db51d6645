package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
	"github.com/migration-aware/adc/pkg/server"
)

func newServer(t *testing.T, report rollout.Report) *httptest.Server {
	t.Helper()
	srv := server.New()
	dashboard.Register(srv, func() rollout.Report { return report })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func fixtureReport() rollout.Report {
	return rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// texts returns the text content of every element whose attributes include all of attrs.
func texts(t *testing.T, page string, attrs map[string]string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("page is not HTML: %v", err)
	}
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			have := map[string]string{}
			for _, a := range n.Attr {
				have[a.Key] = a.Val
			}
			match := true
			for k, v := range attrs {
				if got, ok := have[k]; !ok || got != v {
					match = false
				}
			}
			if match {
				out = append(out, strings.TrimSpace(textOf(n)))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textOf(c))
	}
	return b.String()
}

func one(t *testing.T, page string, attrs map[string]string) string {
	t.Helper()
	got := texts(t, page, attrs)
	if len(got) != 1 {
		t.Fatalf("%d elements with %v, want 1: %q", len(got), attrs, got)
	}
	return got[0]
}

func TestPageRolloutNumbers(t *testing.T) {
	ts := newServer(t, fixtureReport())
	resp, page := get(t, ts.URL+"/dashboard/")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	tests := []struct {
		plugin, field, want string
	}{
		{"kubernetes.io/gce-pd", "nodesMigrated", "2"},
		{"kubernetes.io/gce-pd", "nodesNotMigrated", "1"},
		{"kubernetes.io/gce-pd", "nodesUnknown", "1"},
		{"kubernetes.io/gce-pd", "nodesTotal", "4"},
		{"kubernetes.io/gce-pd", "mode", "on"},
		{"kubernetes.io/aws-ebs", "nodesMigrated", "1"},
		{"kubernetes.io/aws-ebs", "mode", "off"},
		{"kubernetes.io/portworx-volume", "mode", "complete"},
		{"kubernetes.io/portworx-volume", "nodesUnknown", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.plugin+"/"+tt.field, func(t *testing.T) {
			if got := one(t, page, map[string]string{"data-plugin": tt.plugin, "data-field": tt.field}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	mech := map[string]string{"csi": "3", "csi-no-attach": "1", "in-tree": "1", "not-attachable": "1", "wait": "1", "error": "1"}
	for m, want := range mech {
		if got := one(t, page, map[string]string{"data-mechanism": m, "data-field": "volumes"}); got != want {
			t.Errorf("mechanism %s = %q, want %q", m, got, want)
		}
	}
	for id, want := range map[string]string{"nodes-managed": "4", "held-count": "3", "problems-count": "2", "operations-count": "3", "pairs-count": "8", "source": "controller", "node-source": "csinode"} {
		if got := one(t, page, map[string]string{"id": id}); got != want {
			t.Errorf("#%s = %q, want %q", id, got, want)
		}
	}
}

func TestPageHeldProblemsOperations(t *testing.T) {
	_, page := get(t, newServer(t, fixtureReport()).URL+"/dashboard/")
	wait := one(t, page, map[string]string{"data-node": "node-d", "data-pod": "db/pg-2", "data-volume": "data"})
	for _, want := range []string{"wait", "does not exist yet", "5", "in 10s", "5m0s ago"} {
		if !strings.Contains(wait, want) {
			t.Errorf("held row %q lacks %q", wait, want)
		}
	}
	if got := texts(t, page, map[string]string{"data-kind": "version-skew"}); len(got) != 1 || !strings.Contains(got[0], "node-a") {
		t.Errorf("version-skew rows = %q", got)
	}
	if got := texts(t, page, map[string]string{"data-kind": "multi-attach"}); len(got) != 1 || !strings.Contains(got[0], "web/app-2") {
		t.Errorf("multi-attach rows = %q", got)
	}
	durations := texts(t, page, map[string]string{"data-field": "durationSeconds"})
	if want := []string{"300 ms", "2.00 s", "1.50 s"}; !reflect.DeepEqual(durations, want) {
		t.Errorf("operation durations = %q, want %q (newest first)", durations, want)
	}
	// The bars: 2 of 4 migrated is a 50-unit green segment followed by 25 and 25.
	for _, want := range []string{`class="seg-migrated" x="0" y="0" width="50"`, `class="seg-not" x="50" y="0" width="25"`, `class="seg-unknown" x="75" y="0" width="25"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks bar segment %s", want)
		}
	}
}

// Recent flips: newest first, the direction in words, a rollback marked.
func TestPageRecentFlips(t *testing.T) {
	_, page := get(t, newServer(t, fixtureReport()).URL+"/dashboard/")
	if got := texts(t, page, map[string]string{"id": "flips-count"}); len(got) != 1 || got[0] != "2" {
		t.Errorf("flips count = %q, want 2", got)
	}
	forward := one(t, page, map[string]string{"data-migrated": "true"})
	for _, want := range []string{"node-b", "kubernetes.io/gce-pd", "migrated (CSI)", "5s ago"} {
		if !strings.Contains(forward, want) {
			t.Errorf("flip row %q lacks %q", forward, want)
		}
	}
	back := one(t, page, map[string]string{"data-migrated": "false"})
	if !strings.Contains(back, "no longer migrated (in-tree)") || !strings.Contains(back, "1m30s ago") {
		t.Errorf("rollback row = %q", back)
	}
	if strings.Index(page, `data-migrated="true"`) > strings.Index(page, `data-migrated="false"`) {
		t.Errorf("flips are not newest first")
	}
	// A cluster report (adc status, no controller) says flips need a running controller.
	_, page = get(t, newServer(t, rollout.Report{Source: rollout.SourceCluster, RecentFlips: []rollout.FlipRecord{}}).URL+"/dashboard/")
	if got := texts(t, page, map[string]string{"id": "flips"}); len(got) != 1 || !strings.Contains(got[0], "running controller") {
		t.Errorf("cluster report flips = %q", got)
	}
}

// TestPageEscapesClusterData: an external-attacher error (through a failed operation) and a
// CSINode annotation value (through a node note) carrying a script are shown as text.
func TestPageEscapesClusterData(t *testing.T) {
	view := rollouttest.Fixture()
	// Also through a held reason and object names, which come from users too.
	view.Pairs[2].Reason = "the external-attacher reports: " + rollouttest.Script
	view.Pairs[2].Pod = `web/"><script>alert(1)</script>`
	_, page := get(t, newServer(t, rollout.FromController(view, rollouttest.Now)).URL+"/dashboard/")
	if strings.Contains(page, rollouttest.Script) || strings.Contains(strings.ToLower(page), "<script>alert") {
		t.Fatalf("the raw script reached the page:\n%s", page)
	}
	escaped := "&lt;script&gt;alert(1)&lt;/script&gt;"
	if n := strings.Count(page, escaped); n < 4 {
		t.Errorf("escaped script shown %d times, want in the note, the operation error, the held reason and the pod name", n)
	}
	tests := []struct {
		name  string
		attrs map[string]string
	}{
		{"CSINode annotation (note)", map[string]string{"data-node": "node-b"}},
		{"attach error (operation)", map[string]string{"class": "failed"}},
		{"node name (flip)", map[string]string{"data-migrated": "false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := texts(t, page, tt.attrs)
			if len(got) == 0 || !strings.Contains(strings.Join(got, " "), rollouttest.Script) {
				t.Errorf("the script is not shown as text in %v: %q", tt.attrs, got)
			}
		})
	}
	// The JSON escapes it too, so a naive consumer cannot inject it into HTML.
	_, body := get(t, newServer(t, rollout.FromController(view, rollouttest.Now)).URL+"/dashboard/api/v1/rollout")
	if strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Errorf("JSON does not escape the script: %s", body)
	}
}

func TestAPIReturnsTheSameReport(t *testing.T) {
	want := fixtureReport()
	resp, body := get(t, newServer(t, want).URL+"/dashboard/api/v1/rollout")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("GET /dashboard/api/v1/rollout = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got rollout.Report
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	// Times come back in UTC without monotonic readings; compare the JSON forms.
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("round trip differs:\n got %s\nwant %s", a, b)
	}
}

func TestReadOnlyAndHeaders(t *testing.T) {
	ts := newServer(t, fixtureReport())
	for _, path := range []string{"/dashboard/", "/dashboard/api/v1/rollout", "/dashboard/static/dashboard.js"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s = %d, want 405", method, path, resp.StatusCode)
			}
		}
	}
	resp, _ := get(t, ts.URL+"/dashboard/")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP = %q", csp)
	}
	tests := []struct {
		path, contentType string
		status            int
	}{
		{"/dashboard/static/dashboard.css", "text/css; charset=utf-8", http.StatusOK},
		{"/dashboard/static/dashboard.js", "text/javascript; charset=utf-8", http.StatusOK},
		{"/dashboard/static/", "", http.StatusNotFound},
		{"/dashboard/static/nope.js", "", http.StatusNotFound},
		{"/dashboard/nope", "", http.StatusNotFound},
		{"/nope", "", http.StatusNotFound},
		{"/static/dashboard.js", "", http.StatusNotFound},
		{"/api/v1/rollout", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		resp, _ := get(t, ts.URL+tt.path)
		if resp.StatusCode != tt.status || (tt.contentType != "" && resp.Header.Get("Content-Type") != tt.contentType) {
			t.Errorf("GET %s = %d %s, want %d %s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.contentType)
		}
	}
}

// Every path of the dashboard starts with /dashboard (one RBAC rule on the secure port); the
// root and /dashboard itself redirect to the page, for a person who types the bare address
// of a port-forward.
func TestRedirectsToThePage(t *testing.T) {
	ts := newServer(t, fixtureReport())
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/dashboard"} {
		resp, err := noFollow.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != dashboard.PagePath {
			t.Errorf("GET %s = %d to %q, want %d to %s", path, resp.StatusCode, resp.Header.Get("Location"), http.StatusFound, dashboard.PagePath)
		}
	}
}

func TestPageStates(t *testing.T) {
	cluster := fixtureReport()
	cluster.Source, cluster.Operations = rollout.SourceCluster, []rollout.OperationRecord{}
	tests := []struct {
		name   string
		report rollout.Report
		want   []string
	}{
		{"standby", rollout.Standby(migration.DefaultConfig(), rollouttest.Now), []string{`id="standby"`, "does not hold the leader election lease", "No held pairs.", "No attach or detach finished yet."}},
		{"cluster", cluster, []string{"Operations are only known to a running controller."}},
		{"no javascript", fixtureReport(), []string{`<noscript><meta http-equiv="refresh" content="30"></noscript>`, `<script src="/dashboard/static/dashboard.js" defer></script>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, page := get(t, newServer(t, tt.report).URL+"/dashboard/")
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}
