package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
)

// chromiumPath finds a Chromium binary: $CHROMIUM, else Debian's /usr/bin/chromium, else
// chromium or chromium-browser on PATH.
func chromiumPath() (string, []string) {
	tried := []string{}
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		tried = append(tried, p)
		if found, err := exec.LookPath(p); err == nil {
			return found, tried
		}
	}
	return "", tried
}

// serveDashboard serves the controller's dashboard (and /metrics) on 127.0.0.1:0 over plain
// HTTP: the loopback listener a person reaches with `kubectl port-forward`.
func serveDashboard(t *testing.T, rc *rolloutCluster) string {
	t.Helper()
	return serveReports(t, func() rollout.Report { return rollout.FromController(rc.ctrl, time.Now()) })
}

// serveReports serves a dashboard of the reports source returns on 127.0.0.1:0 (plain
// HTTP, loopback).
func serveReports(t *testing.T, source func() rollout.Report) string {
	t.Helper()
	srv := server.New()
	dashboard.Register(srv, source)
	l, err := server.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serving the dashboard: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// newBrowser starts headless Chromium with a fresh profile; it skips the test only when no
// Chromium binary exists.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, tried := chromiumPath()
	if path == "" {
		t.Skipf("no Chromium binary found (tried $CHROMIUM and %s); install Debian's chromium package (apt-get install chromium) to run the browser test", strings.Join(tried, ", "))
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium %s: %v", path, err)
	}
	return ctx
}

// textOf reads an element's text content by CSS selector.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// watchDialogs counts JavaScript dialogs (alert, confirm, prompt) opened in the tab and
// dismisses them, so a script that ran would be noticed and could not block the test.
func watchDialogs(t *testing.T, ctx context.Context) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	opened := make(chan string, 16)
	err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			n.Add(1)
			select {
			case opened <- string(d.Type) + ": " + d.Message:
			default:
			}
		}
	})
	if err != nil {
		t.Fatalf("listening for dialogs: %v", err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case msg := <-opened:
				t.Errorf("a JavaScript dialog opened (%s)", msg)
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}
		}
	}()
	return &n
}

// testBrowser loads the dashboard of the controller running on the seeded cluster in
// headless Chromium and checks the numbers it shows against the seeded cluster, that
// cluster-provided script text is shown as text and never runs, and that the page refreshes
// itself with JavaScript on and still shows everything with JavaScript off.
func testBrowser(t *testing.T, rc *rolloutCluster) {
	browser := newBrowser(t)
	url := serveDashboard(t, rc)

	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()
	dialogs := watchDialogs(t, ctx)
	// The bare address, as a person types it after `kubectl port-forward`: it redirects to
	// the page under /dashboard/.
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#plugins"))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}

	gce := `[data-plugin="kubernetes.io/gce-pd"]`
	px := `[data-plugin="kubernetes.io/portworx-volume"]`
	checks := []struct {
		sel, want string
	}{
		{gce + `[data-field="nodesMigrated"]`, "2"},
		{gce + `[data-field="nodesNotMigrated"]`, "1"},
		{gce + `[data-field="nodesUnknown"]`, "1"},
		{gce + `[data-field="nodesTotal"]`, "4"},
		{gce + `[data-field="mode"]`, "on"},
		{`[data-plugin="kubernetes.io/aws-ebs"][data-field="mode"]`, "off"},
		{`[data-plugin="kubernetes.io/aws-ebs"][data-field="nodesMigrated"]`, "1"},
		{`#nodes-managed`, "4"},
		{`[data-mechanism="csi"][data-field="volumes"]`, "4"},
		{`[data-mechanism="in-tree"][data-field="volumes"]`, "1"},
		{`[data-mechanism="wait"][data-field="volumes"]`, "1"},
		{`[data-mechanism="error"][data-field="volumes"]`, "1"},
		{`[data-mechanism="not-attachable"][data-field="volumes"]`, "1"},
		{`[data-mechanism="csi-no-attach"][data-field="volumes"]`, "0"},
		{`#held-count`, "3"},
		{`#problems-count`, "2"},
		// Volumes by path: gce-pd has 6 volumes, 4 through CSI, 2 held (in-tree on c
		// without an in-tree attacher, wait on d); aws-ebs's one is held (skew).
		{gce + `[data-field="volumesCSI"]`, "4"},
		{gce + `[data-field="volumesTotal"]`, "6"},
		{gce + `[data-field="volumesInTree"]`, "0"},
		{gce + `[data-field="volumesHeld"]`, "2"},
		{`[data-plugin="kubernetes.io/aws-ebs"][data-field="volumesHeld"]`, "1"},
		// Readiness for complete: c and d block gce-pd, app-c and app-d would change path.
		{gce + `[data-field="readiness"]`, "not ready"},
		{gce + `[data-field="blockingNodes"]`, "2"},
		{gce + `[data-field="changingVolumes"]`, "2"},
		{`[data-plugin="kubernetes.io/aws-ebs"][data-field="blockingNodes"]`, "3"},
		// portworx is complete and only a reports it migrated: skew, not a bar.
		{px + `[data-field="readiness"]`, "complete"},
		{px + `[data-field="skewNodes"]`, "3"},
		{px + `[data-field="verdict"]`, "complete, skew"},
		{`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-blocker-node="` + rc.notMigrated + `"]`, rc.notMigrated + "not-migrated"},
		{`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-blocker-node="` + rc.unknown + `"]`, rc.unknown + "unknown"},
		{`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-changing-pod="` + rc.ns + `/app-c"] .mech`, "in-tree"},
		{`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-changing-pod="` + rc.ns + `/app-d"] .mech`, "wait"},
	}
	checkNumbers := func(ctx context.Context, when string) {
		for _, c := range checks {
			if got := textOf(t, ctx, c.sel); got != c.want {
				t.Errorf("%s the page shows %s = %q, want %q", when, c.sel, got, c.want)
			}
		}
		// The complete plugin's row has no rollout bar.
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#plugins tr[data-plugin="kubernetes.io/portworx-volume"] svg').length`)); err != nil || n != 0 {
			t.Errorf("%s the complete plugin's row has %d bars (%v), want a skew warning instead", when, n, err)
		}
	}
	checkNumbers(ctx, "on load")

	// Cluster data with a script: shown as text in the node note (CSINode annotation) and in
	// the failed operation (the external-attacher's attachError), never run.
	if note := textOf(t, ctx, `#notes li[data-node="`+rc.hostile+`"] .note`); !strings.Contains(note, script) {
		t.Errorf("node note = %q, want the annotation's script shown as text", note)
	}
	if opError := textOf(t, ctx, `#operations tr.failed .error`); !strings.Contains(opError, script) {
		t.Errorf("failed operation = %q, want the attach error's script shown as text", opError)
	}
	if skew := textOf(t, ctx, `#problems tr[data-kind="version-skew"]`); !strings.Contains(skew, rc.migrated) || !strings.Contains(skew, "app-ebs") {
		t.Errorf("version skew row = %q", skew)
	}
	if multi := textOf(t, ctx, `#problems tr[data-kind="multi-attach"]`); !strings.Contains(multi, "shared-") {
		t.Errorf("multi-attach row = %q", multi)
	}
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.scripts).map(s => s.src || ("inline:" + s.textContent))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 1 || !strings.HasSuffix(scripts[0], dashboard.StaticPath+"dashboard.js") {
		t.Errorf("scripts on the page = %q, want only %sdashboard.js", scripts, dashboard.StaticPath)
	}

	// With JavaScript on the page re-fetches itself; the numbers survive the swap.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("refresh-status").textContent.indexOf("updated") >= 0`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the page did not refresh itself: %v", err)
	}
	checkNumbers(ctx, "after a refresh")

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	saveScreenshot(t, png)

	// With JavaScript off the same numbers are there, and the page reloads itself instead.
	noJS, cancelNoJS := chromedp.NewContext(browser)
	defer cancelNoJS()
	if _, err := chromedp.Call(noJS, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("disabling JavaScript: %v", err)
	}
	if err := chromedp.Do(noJS, chromedp.Navigate(url+dashboard.PagePath), chromedp.WaitVisible(chromedp.CSS("#plugins"))); err != nil {
		t.Fatalf("loading the page with JavaScript off: %v", err)
	}
	checkNumbers(noJS, "with JavaScript off")
	if class, err := chromedp.Run(noJS, chromedp.AttributeValue(chromedp.CSS("html"), "class")); err != nil || class.Value != "no-js" {
		t.Errorf("with JavaScript off the html class is %q (%v), want no-js: the script must not have run", class.Value, err)
	}

	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened", n)
	}
	testNodeView(t, browser, url, rc)
	testHostileFields(t, browser, rc)

	// The JSON API and /metrics agree with the page.
	body := httpGet(t, url+dashboard.APIPath)
	if !strings.Contains(body, `"nodesMigrated": 2`) || !strings.Contains(body, `"volumesByPath": {
        "csi": 4,
        "inTree": 0,
        "held": 2,
        "total": 6
      }`) {
		t.Errorf("GET %s:\n%s", dashboard.APIPath, body)
	}
	body = httpGet(t, url+"/metrics")
	for _, want := range []string{
		`adc_migration_nodes{plugin="kubernetes.io/gce-pd",state="migrated"} 2`,
		`adc_held_pairs{mechanism="in-tree"} 1`,
		`adc_version_skew_pairs 1`,
		`adc_multi_attach_blocked_pairs 1`,
		`adc_migration_volumes{path="csi",plugin="kubernetes.io/gce-pd"} 4`,
		`adc_migration_volumes{path="held",plugin="kubernetes.io/gce-pd"} 2`,
		`adc_migration_complete_ready{plugin="kubernetes.io/gce-pd"} 0`,
		`adc_migration_complete_blockers{kind="nodes",plugin="kubernetes.io/gce-pd"} 2`,
		`adc_migration_complete_blockers{kind="volumes",plugin="kubernetes.io/gce-pd"} 2`,
		`adc_migration_complete_blockers{kind="nodes",plugin="kubernetes.io/portworx-volume"} 3`,
		`storage_operation_duration_seconds_count{migrated="true",operation_name="volume_attach",status="fail-unknown",volume_plugin="kubernetes.io/gce-pd"}`,
		`workqueue_depth{name="adc_node"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// saveScreenshot writes the PNG under the test's temp dir and, when the repository's bin
// folder exists, to bin/dashboard-screenshot.png for a human to look at.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("the screenshot is not a PNG (%d bytes)", len(png))
	}
	path := filepath.Join(t.TempDir(), "dashboard.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	bin := filepath.Join("..", "..", "..", "bin")
	if st, err := os.Stat(bin); err == nil && st.IsDir() {
		copyPath := filepath.Join(bin, "dashboard-screenshot.png")
		if err := os.WriteFile(copyPath, png, 0o644); err != nil {
			t.Errorf("copying the screenshot: %v", err)
		} else if abs, err := filepath.Abs(copyPath); err == nil {
			t.Logf("screenshot copied to %s", abs)
		}
	} else if !errors.Is(err, os.ErrNotExist) && err != nil {
		t.Logf("not copying the screenshot: %v", err)
	}
}

// testHostileFields loads, with JavaScript on and off, a page of the seeded cluster's report
// with the script payload planted in every field the readiness panel shows (the API server
// would refuse such names, so they are planted in the report), and checks that each is shown
// as text and that no script runs.
func testHostileFields(t *testing.T, browser context.Context, rc *rolloutCluster) {
	url := serveReports(t, func() rollout.Report { return plantScript(rollout.FromController(rc.ctrl, time.Now())) })
	for _, js := range []bool{true, false} {
		ctx, cancel := chromedp.NewContext(browser)
		dialogs := watchDialogs(t, ctx)
		if !js {
			if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatalf("disabling JavaScript: %v", err)
			}
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(url+dashboard.PagePath), chromedp.WaitVisible(chromedp.CSS("#readiness"))); err != nil {
			t.Fatalf("loading the hostile page (JavaScript %v): %v", js, err)
		}
		for _, sel := range []string{
			`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-blocker-node]`,
			`.readiness[data-plugin="kubernetes.io/gce-pd"] tr[data-changing-pod]`,
			`#flips tr[data-migrated]`,
		} {
			if got := textOf(t, ctx, sel); !strings.Contains(got, script) {
				t.Errorf("JavaScript %v: %s = %q, want the script shown as text", js, sel, got)
			}
		}
		if n := dialogs.Load(); n != 0 {
			t.Errorf("JavaScript %v: %d dialogs opened on the hostile page", js, n)
		}
		cancel()
	}
}

// plantScript puts the script payload into every cluster-data field of the readiness panel,
// and into a recent flip's node name.
func plantScript(r rollout.Report) rollout.Report {
	r.RecentFlips = append([]rollout.FlipRecord{{Time: r.GeneratedAt, Node: "node" + script, Plugin: "kubernetes.io/gce-pd", Migrated: true}}, r.RecentFlips...)
	for i := range r.Plugins {
		rd := &r.Plugins[i].Readiness
		for j := range rd.NodesNotMigrated {
			rd.NodesNotMigrated[j].Node += script
		}
		for j := range rd.VolumesChangingPath {
			c := &rd.VolumesChangingPath[j]
			c.Node, c.Pod, c.Volume, c.PV = c.Node+script, c.Pod+script, c.Volume+script, c.PV+script
		}
	}
	return r
}

// testNodeView follows the dashboard's link from gce-pd's "not migrated" count to the node
// view and checks, with JavaScript on and off, what it shows of each seeded node.
func testNodeView(t *testing.T, browser context.Context, url string, rc *rolloutCluster) {
	for _, js := range []bool{true, false} {
		ctx, cancel := chromedp.NewContext(browser)
		if !js {
			if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatalf("disabling JavaScript: %v", err)
			}
		}
		when := fmt.Sprintf("node view (JavaScript %v):", js)
		// From the rollout page, the link of gce-pd's not-migrated count.
		if err := chromedp.Do(ctx, chromedp.Navigate(url+dashboard.PagePath), chromedp.WaitVisible(chromedp.CSS("#plugins")),
			chromedp.Click(chromedp.CSS(`[data-plugin="kubernetes.io/gce-pd"][data-field="nodesNotMigrated"] a`)),
			chromedp.WaitVisible(chromedp.CSS("#nodes"))); err != nil {
			t.Fatalf("%s following the not-migrated link: %v", when, err)
		}
		if got := textOf(t, ctx, "#nodes-count"); got != "1" {
			t.Errorf("%s gce-pd not migrated shows %s nodes, want 1", when, got)
		}
		row := `#nodes tr[data-node="` + rc.notMigrated + `"] `
		for sel, want := range map[string]string{
			row + `[data-field="kubelet"]`:         oldKubeletVersion,
			row + `[data-field="source"]`:          "CSINode",
			row + `[data-field="state"]`:           "not-migrated",
			row + `[data-field="migrated"]`:        "-",
			row + `[data-field="volumes-in-tree"]`: "1",
			row + `[data-field="volumes-csi"]`:     "0",
			`#state-filter [aria-current="page"]`:  "not migrated",
		} {
			if got := textOf(t, ctx, sel); got != want {
				t.Errorf("%s %s = %q, want %q", when, sel, got, want)
			}
		}
		// Every node, with its migrated plugins and volumes.
		if err := chromedp.Do(ctx, chromedp.Navigate(url+dashboard.NodesPath), chromedp.WaitVisible(chromedp.CSS("#nodes"))); err != nil {
			t.Fatalf("%s loading /nodes: %v", when, err)
		}
		a := `#nodes tr[data-node="` + rc.migrated + `"] `
		d := `#nodes tr[data-node="` + rc.unknown + `"] `
		for sel, want := range map[string]string{
			`#nodes-count`:                              "4",
			a + `[data-field="kubelet"]`:                kubeletVersion,
			a + `[data-field="migrated"]`:               ebsPlugin + ", " + gcePlugin + ", " + pxPlugin,
			a + `[data-field="volumes-csi"]`:            "2",
			a + `[data-field="volumes-error"]`:          "1",
			a + `[data-field="volumes-not-attachable"]`: "1",
			d + `[data-field="source"]`:                 "none",
			d + `[data-field="volumes-wait"]`:           "1",
		} {
			if got := textOf(t, ctx, sel); got != want {
				t.Errorf("%s %s = %q, want %q", when, sel, got, want)
			}
		}
		cancel()
	}
	var nr rollout.NodesReport
	if err := json.Unmarshal([]byte(httpGet(t, url+dashboard.NodesAPIPath+"?plugin="+gcePlugin+"&state=unknown")), &nr); err != nil {
		t.Fatal(err)
	}
	if len(nr.Nodes) != 1 || nr.Nodes[0].Name != rc.unknown || nr.Nodes[0].KubeletVersion != kubeletVersion {
		t.Errorf("%s gce-pd unknown = %+v, want only %s", dashboard.NodesAPIPath, nr.Nodes, rc.unknown)
	}
}
