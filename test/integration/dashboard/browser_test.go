package dashboard

import (
	"context"
	"errors"
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

// serveDashboard serves the controller's dashboard (and /metrics) on 127.0.0.1:0.
func serveDashboard(t *testing.T, rc *rolloutCluster) string {
	t.Helper()
	srv := server.New()
	dashboard.Register(srv, func() rollout.Report { return rollout.FromController(rc.ctrl, time.Now()) })
	l, err := server.Listen("127.0.0.1:0")
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
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#plugins"))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}

	gce := `[data-plugin="kubernetes.io/gce-pd"]`
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
	}
	checkNumbers := func(when string) {
		for _, c := range checks {
			if got := textOf(t, ctx, c.sel); got != c.want {
				t.Errorf("%s the page shows %s = %q, want %q", when, c.sel, got, c.want)
			}
		}
	}
	checkNumbers("on load")

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
	if len(scripts) != 1 || !strings.HasSuffix(scripts[0], "/static/dashboard.js") {
		t.Errorf("scripts on the page = %q, want only /static/dashboard.js", scripts)
	}

	// With JavaScript on the page re-fetches itself; the numbers survive the swap.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("refresh-status").textContent.indexOf("updated") >= 0`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the page did not refresh itself: %v", err)
	}
	checkNumbers("after a refresh")

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
	if err := chromedp.Do(noJS, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#plugins"))); err != nil {
		t.Fatalf("loading the page with JavaScript off: %v", err)
	}
	if got := textOf(t, noJS, gce+`[data-field="nodesMigrated"]`); got != "2" {
		t.Errorf("with JavaScript off the page shows gce-pd migrated %q, want 2", got)
	}
	if class, err := chromedp.Run(noJS, chromedp.AttributeValue(chromedp.CSS("html"), "class")); err != nil || class.Value != "no-js" {
		t.Errorf("with JavaScript off the html class is %q (%v), want no-js: the script must not have run", class.Value, err)
	}

	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened", n)
	}

	// The JSON API and /metrics agree with the page.
	body := httpGet(t, url+"/api/v1/rollout")
	if !strings.Contains(body, `"nodesMigrated": 2`) {
		t.Errorf("GET /api/v1/rollout:\n%s", body)
	}
	body = httpGet(t, url+"/metrics")
	for _, want := range []string{
		`adc_migration_nodes{plugin="kubernetes.io/gce-pd",state="migrated"} 2`,
		`adc_held_pairs{mechanism="in-tree"} 1`,
		`adc_version_skew_pairs 1`,
		`adc_multi_attach_blocked_pairs 1`,
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
