package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

const boardPath = "../../../deploy/grafana/migration-rollout.json"

// TestPrometheusBoard proves the Grafana board on a real Prometheus: Debian's prometheus
// scrapes the controller of a seeded mid-rollout cluster on its secure port, as a Prometheus
// in the cluster is configured by the ServiceMonitor example (deploy/prometheus): HTTPS,
// verifying the serving certificate, with the bearer token of a ServiceAccount bound to the
// shipped ClusterRole adc-metrics-reader; a job without a token is refused (401). Every
// panel's query, evaluated through Prometheus' HTTP API, returns the series and values the
// seeded cluster implies. The queries over rates of events (flips, detaches, forced
// detaches) are checked after the test makes those events happen: a node flipping gce-pd
// twice and two managed nodes deleted.
func TestPrometheusBoard(t *testing.T) {
	bin := prometheusPath()
	if bin == "" {
		t.Skip("no prometheus binary found (tried $PROMETHEUS, /usr/bin/prometheus and prometheus on PATH); install Debian's prometheus package (apt-get install prometheus) to run this test")
	}
	board := boardExprs(t)
	rc := seedCluster(t)
	_, setupCtx := ktesting.NewTestContext(t)
	shippedClusterRole(setupCtx, t, "adc-metrics-reader")
	reader := framework.NewReader(setupCtx, t, framework.Get(t).Client, "monitoring", "prometheus", "adc-metrics-reader")
	framework.WaitAccess(setupCtx, t, framework.Get(t).Client, reader.User(), "/metrics", true)
	endpoint := serveSecure(t, rc)
	target := endpoint.Addr
	prom := startPrometheus(t, bin, scrapeJobs(t, serviceMonitorExample(t), endpoint, reader.Token))
	start := time.Now()
	prom.waitForScrapes(t, "adc", target, 2)
	t.Logf("prometheus %s scraping https://%s with a bearer token: target up after %s", prom.url, target, time.Since(start).Round(time.Millisecond))
	prom.waitForScrapeError(t, "adc-without-token", "401")

	checked := map[string]bool{}
	check := func(expr string, want func(series) error) {
		t.Helper()
		if !board[expr] {
			t.Errorf("the board has no query %q (checked by this test)", expr)
			return
		}
		checked[expr] = true
		got, err := prom.poll(expr, want, 15*time.Second)
		if err != nil {
			t.Errorf("panel query %s: %v; got %s", expr, err, got)
			return
		}
		t.Logf("%s => %s", expr, got)
	}

	// The seeded state (see seedCluster): gce-pd on, 2 of 4 managed nodes migrated, 1 not, 1
	// unknown; aws-ebs off; portworx complete with only node a reporting it migrated.
	check(`100 * sum by (plugin) (adc_migration_nodes{state="migrated"}) / clamp_min(sum by (plugin) (adc_migration_nodes), 1)`,
		values(map[string]float64{"plugin=" + gcePlugin: 50, "plugin=" + pxPlugin: 25}))
	check(`sum by (plugin, state) (adc_migration_nodes)`, values(map[string]float64{
		"plugin=" + gcePlugin + ",state=migrated": 2, "plugin=" + gcePlugin + ",state=not-migrated": 1, "plugin=" + gcePlugin + ",state=unknown": 1,
		"plugin=" + pxPlugin + ",state=migrated": 1, "plugin=" + pxPlugin + ",state=not-migrated": 2, "plugin=" + pxPlugin + ",state=unknown": 1,
		"plugin=" + ebsPlugin + ",state=migrated": 1,
	}))
	check(`max by (plugin, mode) (adc_migration_mode) == 1`, values(map[string]float64{
		"mode=on,plugin=" + gcePlugin: 1, "mode=off,plugin=" + ebsPlugin: 1, "mode=complete,plugin=" + pxPlugin: 1,
	}))
	check(`sum by (mechanism) (adc_decisions)`, values(map[string]float64{
		"mechanism=csi": 4, "mechanism=not-attachable": 1, "mechanism=in-tree": 1, "mechanism=wait": 1, "mechanism=error": 1,
	}))
	// New panels: volumes by path (the controller holds the in-tree pair on c: it has no
	// in-tree attacher) and readiness for complete (c and d block, app-c and app-d would
	// change path; portworx has 3 nodes not reporting it migrated).
	check(`sum by (plugin, path) (adc_migration_volumes)`, values(map[string]float64{
		"path=csi,plugin=" + gcePlugin: 4, "path=in-tree,plugin=" + gcePlugin: 0, "path=held,plugin=" + gcePlugin: 2,
	}))
	check(`max by (plugin) (adc_migration_complete_ready)`, values(map[string]float64{"plugin=" + gcePlugin: 0, "plugin=" + pxPlugin: 0}))
	check(`sum by (plugin, kind) (adc_migration_complete_blockers)`, values(map[string]float64{
		"kind=nodes,plugin=" + gcePlugin: 2, "kind=volumes,plugin=" + gcePlugin: 2, "kind=nodes,plugin=" + pxPlugin: 3,
	}))
	check(`sum by (mechanism) (adc_held_pairs)`, values(map[string]float64{"mechanism=in-tree": 1, "mechanism=wait": 1, "mechanism=error": 1}))
	check(`max by (mechanism) (adc_held_pairs_oldest_age_seconds)`, all("mechanism=in-tree", "mechanism=wait", "mechanism=error")(positive))
	check(`sum by (mechanism) (adc_held_pairs_retries)`, all("mechanism=in-tree", "mechanism=wait", "mechanism=error")(positive))
	check(`sum(adc_version_skew_pairs)`, values(map[string]float64{"": 1}))
	check(`sum(adc_multi_attach_blocked_pairs)`, values(map[string]float64{"": 1}))
	check(`sum by (plugin_name, state) (attachdetach_controller_total_volumes)`,
		// gce-pd desired: pd-a and pd-shared on a, pd-bad and pd-shared on b, pd-c, pd-d;
		// attached: pd-a and pd-shared once (pd-bad's attach failed). aws-ebs: held, not attached.
		values(map[string]float64{
			"plugin_name=" + gcePlugin + ",state=" + metrics.StateDesired: 6, "plugin_name=" + gcePlugin + ",state=" + metrics.StateActual: 2,
			"plugin_name=" + ebsPlugin + ",state=" + metrics.StateDesired: 1, "plugin_name=" + ebsPlugin + ",state=" + metrics.StateActual: 0,
		}))
	check(`sum by (name) (workqueue_depth{name=~"adc_node|adc_node_status"})`, all("name=adc_node", "name=adc_node_status")(atLeast(0)))
	// Events. c reports gce-pd migrated (a flip: app-c's pair goes through CSI and attaches, a
	// migrated attach), then not migrated again (a second flip; the attachment stays); then
	// nodes c and a are deleted with volumes attached: two forced detaches (node-deleted).
	// Each step waits for Prometheus to have scraped the previous one, so that the counters'
	// series exist before they grow and rate() and increase() see them grow.
	_, ctx := ktesting.NewTestContext(t)
	client := framework.Get(t).Client
	kubelet := simulator.Kubelet{Client: client}
	waitAttached(t, ctx, rc.notMigrated, false)
	if err := kubelet.ReportCSINode(ctx, rc.notMigrated, gcePlugin, nodeDrivers...); err != nil {
		t.Fatal(err)
	}
	waitAttached(t, ctx, rc.notMigrated, true)
	flipsQuery := `sum(` + metrics.NodeFlipsName + `{plugin="` + gcePlugin + `"})`
	_, err := prom.poll(flipsQuery, all("")(atLeast(1)), 5*time.Second)
	flipsExported := err == nil
	if err := kubelet.ReportCSINode(ctx, rc.notMigrated, "", nodeDrivers...); err != nil {
		t.Fatal(err)
	}
	if flipsExported {
		prom.waitValue(t, flipsQuery, 2)
	}
	zero := int64(0)
	deleteNode := func(name string) {
		if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatalf("deleting node %s: %v", name, err)
		}
	}
	// A forced detach is counted when adc decides it, its duration when the VolumeAttachment
	// is gone, later: wait for both, so that the detach series exists before it grows.
	forced := `sum(attachdetach_controller_forced_detaches{reason="node-deleted"})`
	detached := `sum(storage_operation_duration_seconds_count{operation_name="volume_detach",volume_plugin="` + gcePlugin + `"})`
	deleteNode(rc.notMigrated)
	prom.waitValue(t, forced, 1)
	prom.waitValue(t, detached, 1)
	deleteNode(rc.migrated)
	prom.waitValue(t, forced, 2)
	prom.waitValue(t, detached, 2)

	flips := `sum by (plugin) (rate(adc_migration_node_flips_total[$__rate_interval]))`
	if flipsExported {
		check(flips, all("plugin="+gcePlugin)(positive))
	} else {
		checked[flips] = true
		t.Logf("SKIP panel query %s: the controller does not export %s yet (no series 5s after a flip)", flips, metrics.NodeFlipsName)
	}
	check(`sum by (reason) (increase(attachdetach_controller_forced_detaches[1h]))`, all("reason=node-deleted")(positive))
	// Operations within the rate window: app-c's migrated gce-pd attach, the two forced
	// detaches. (pd-bad's attach failed before Prometheus started: no failure in the window.)
	for _, q := range []string{"0.5", "0.9", "0.99"} {
		check(`histogram_quantile(`+q+`, sum by (le, migrated) (rate(storage_operation_duration_seconds_bucket{operation_name="volume_attach"}[$__rate_interval])))`,
			all("migrated=true")(positive))
	}
	check(`sum by (operation_name) (rate(storage_operation_duration_seconds_count{status="fail-unknown"}[$__rate_interval])) / clamp_min(sum by (operation_name) (rate(storage_operation_duration_seconds_count[$__rate_interval])), 1e-9)`,
		all("operation_name=volume_attach")(between(0, 0)))
	// The forced detach of app-c's migrated gce-pd volume counts as migrated, under its in-tree
	// plugin, as upstream labels it, although this controller did not see its attach start.
	check(`histogram_quantile(0.9, sum by (le, migrated) (rate(storage_operation_duration_seconds_bucket{operation_name="volume_detach"}[$__rate_interval])))`,
		some("migrated=true", positive))
	check(`sum by (volume_plugin, operation_name) (rate(storage_operation_duration_seconds_count[$__rate_interval]))`, func(s series) error {
		if err := all("operation_name=volume_attach,volume_plugin=" + gcePlugin)(positive)(s); err != nil {
			return err
		}
		return some("operation_name=volume_detach,volume_plugin="+gcePlugin, positive)(s)
	})
	check(`histogram_quantile(0.9, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket{name=~"adc_node|adc_node_status"}[$__rate_interval])))`,
		all("name=adc_node")(positive))

	// Every other query of the board: it must evaluate and return a series.
	var rest []string
	for e := range board {
		if !checked[e] {
			rest = append(rest, e)
		}
	}
	sort.Strings(rest)
	for _, e := range rest {
		t.Errorf("panel query %s is not checked by this test; add its expected values", e)
		if got, err := prom.poll(e, func(s series) error { return nil }, 5*time.Second); err != nil {
			t.Errorf("panel query %s: %v; got %s", e, err, got)
		}
	}
	t.Logf("%d panel queries evaluated on prometheus in %s", len(board), time.Since(start).Round(time.Millisecond))
}

// prometheusPath finds a Prometheus binary: $PROMETHEUS, else Debian's /usr/bin/prometheus,
// else prometheus on PATH.
func prometheusPath() string {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/prometheus", "prometheus"} {
		if found, err := exec.LookPath(p); err == nil {
			return found
		}
	}
	return ""
}

// boardExprs reads every query of the Grafana board, with Grafana's variables replaced by
// what Grafana would send for this test's 1s scrape interval.
func boardExprs(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(boardPath))
	if err != nil {
		t.Fatal(err)
	}
	var board any
	if err := json.Unmarshal(data, &board); err != nil {
		t.Fatalf("%s is not valid JSON: %v", boardPath, err)
	}
	out := map[string]bool{}
	for _, e := range metrics.BoardQueries(board) {
		out[e] = true
	}
	if len(out) < 10 {
		t.Fatalf("found only %d queries in %s", len(out), boardPath)
	}
	return out
}

// grafanaVars are Grafana's built-in variables and what this test substitutes for them.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "1m", "${__rate_interval}", "1m",
	"$__interval_ms", "1000", "$__interval", "1s", "${__interval}", "1s",
	"$__range_s", "3600", "$__range", "1h",
)

// prometheus is a running Prometheus server.
type prometheus struct {
	url string
}

// scrapeJobs is the scrape configuration of a Prometheus in the cluster set up by the
// ServiceMonitor example, for the test's secure port: job adc with the endpoint's scheme and
// path, the reader's token in a file (bearerTokenFile: the Pod's mounted token), and the
// serving certificate verified against the test's CA (where the example, facing adc's
// self-signed certificate, skips verification); and job adc-without-token, the same without
// the token, which adc must refuse.
func scrapeJobs(t *testing.T, ep serviceMonitorEndpoint, secure secureEndpoint, token string) string {
	t.Helper()
	if ep.Scheme != "https" || ep.Path != "/metrics" || ep.BearerTokenFile == "" || ep.Port != "https" {
		t.Fatalf("the ServiceMonitor example scrapes %+v, want port https, scheme https, path /metrics and a bearer token file", ep)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	job := func(name, auth string) string {
		return fmt.Sprintf(`  - job_name: %s
    scheme: %s
    metrics_path: %s
%s    tls_config:
      ca_file: %q
    static_configs:
      - targets: [%q]
`, name, ep.Scheme, ep.Path, auth, secure.CAFile, secure.Addr)
	}
	return job("adc", fmt.Sprintf("    authorization:\n      credentials_file: %q\n", tokenFile)) + job("adc-without-token", "")
}

// startPrometheus runs bin with the scrape jobs (YAML list items of scrape_configs, every
// second) and its storage in a temporary directory; it is killed and its directory removed
// at cleanup.
func startPrometheus(t *testing.T, bin, jobs string) *prometheus {
	t.Helper()
	dir, err := os.MkdirTemp("", "adc-prometheus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	config := `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
` + jobs
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := freeAddr(t)
		logPath := filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt))
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin,
			"--config.file="+configPath,
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
			"--log.level=warn",
		)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		p := &prometheus{url: "http://" + addr}
		ready := false
		deadline := time.Now().Add(15 * time.Second)
		for !ready && time.Now().Before(deadline) {
			select {
			case err := <-exited:
				logFile.Close()
				out, _ := os.ReadFile(logPath)
				lastErr = fmt.Errorf("prometheus exited (%v):\n%s", err, out)
				deadline = time.Time{}
				continue
			case <-time.After(100 * time.Millisecond):
			}
			if resp, err := http.Get(p.url + "/-/ready"); err == nil {
				ready = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		if !ready {
			if lastErr == nil {
				_ = cmd.Process.Kill()
				<-exited
				logFile.Close()
				out, _ := os.ReadFile(logPath)
				lastErr = fmt.Errorf("prometheus not ready on %s after 15s:\n%s", addr, out)
			}
			t.Logf("attempt %d: %v", attempt+1, lastErr)
			continue // another port
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			logFile.Close()
			if t.Failed() {
				out, _ := os.ReadFile(logPath)
				t.Logf("prometheus log:\n%s", out)
			}
		})
		return p
	}
	t.Fatalf("could not start prometheus: %v", lastErr)
	return nil
}

// freeAddr returns 127.0.0.1:<a port free a moment ago>: Prometheus cannot listen on port 0.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// apiGet GETs a Prometheus API path and decodes its data field into out.
func (p *prometheus) apiGet(path string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET %s: %d, %v", path, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, body.ErrorType, body.Error)
	}
	return json.Unmarshal(body.Data, out)
}

// activeTarget is a target of Prometheus' /api/v1/targets.
type activeTarget struct {
	ScrapePool string    `json:"scrapePool"`
	ScrapeURL  string    `json:"scrapeUrl"`
	Health     string    `json:"health"`
	LastError  string    `json:"lastError"`
	LastScrape time.Time `json:"lastScrape"`
}

// targets returns Prometheus' active targets.
func (p *prometheus) targets() ([]activeTarget, error) {
	var targets struct {
		ActiveTargets []activeTarget `json:"activeTargets"`
	}
	err := p.apiGet("/api/v1/targets", nil, &targets)
	return targets.ActiveTargets, err
}

// waitForScrapeError waits until the job's target has been scraped and failed with an
// error containing want.
func (p *prometheus) waitForScrapeError(t *testing.T, job, want string) {
	t.Helper()
	framework.Eventually(t.Context(), t, "prometheus job "+job+" failing with "+want, 20*time.Second, func(context.Context) (bool, string) {
		targets, err := p.targets()
		if err != nil {
			return false, err.Error()
		}
		for _, tg := range targets {
			if tg.ScrapePool == job && tg.Health == "down" && strings.Contains(tg.LastError, want) {
				t.Logf("job %s: %s", job, tg.LastError)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", targets)
	})
}

// waitForScrapes waits until the job's target is up and has been scraped n times since.
func (p *prometheus) waitForScrapes(t *testing.T, job, target string, n int) {
	t.Helper()
	var last string
	var first time.Time
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if targets, err := p.targets(); err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%+v", targets)
			for _, tg := range targets {
				if tg.ScrapePool != job || !strings.Contains(tg.ScrapeURL, target) || tg.Health != "up" {
					continue
				}
				if first.IsZero() {
					first = tg.LastScrape
				}
				if !tg.LastScrape.Before(first.Add(time.Duration(n-1) * time.Second)) {
					return
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prometheus did not scrape %s %d times within 20s; targets: %s", target, n, last)
}

// series is an instant query's result: value by label set ("k=v,k=v", names sorted,
// __name__ left out).
type series map[string]float64

func (s series) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("{%s} %g", k, s[k])
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// query evaluates expr (Grafana variables substituted) now.
func (p *prometheus) query(expr string) (series, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.apiGet("/api/v1/query", url.Values{"query": {grafanaVars.Replace(expr)}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", data.ResultType)
	}
	out := series{}
	for _, r := range data.Result {
		var labels []string
		for k, v := range r.Metric {
			if k != "__name__" {
				labels = append(labels, k+"="+v)
			}
		}
		sort.Strings(labels)
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %v", r.Value[1], err)
		}
		out[strings.Join(labels, ",")] = v
	}
	return out, nil
}

// poll evaluates expr until it returns a non-empty result want accepts, or timeout passes.
func (p *prometheus) poll(expr string, want func(series) error, timeout time.Duration) (series, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := p.query(expr)
		if err == nil {
			if len(got) == 0 {
				err = fmt.Errorf("no series (an empty panel)")
			} else {
				err = want(got)
			}
		}
		if err == nil || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitValue waits until expr's single series is at least min.
func (p *prometheus) waitValue(t *testing.T, expr string, min float64) {
	t.Helper()
	if got, err := p.poll(expr, all("")(atLeast(min)), 15*time.Second); err != nil {
		t.Fatalf("%s: %v; got %s", expr, err, got)
	}
}

// values wants these series with exactly these values (others may exist).
func values(want map[string]float64) func(series) error {
	return func(got series) error {
		var bad []string
		for k, v := range want {
			if g, ok := got[k]; !ok {
				bad = append(bad, fmt.Sprintf("no series {%s}", k))
			} else if g != v {
				bad = append(bad, fmt.Sprintf("{%s} = %g, want %g", k, g, v))
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return fmt.Errorf("%s", strings.Join(bad, "; "))
		}
		return nil
	}
}

// all wants these series, each with a value ok accepts (finite: no NaN from an empty rate).
func all(keys ...string) func(ok func(float64) bool) func(series) error {
	return func(ok func(float64) bool) func(series) error {
		return func(got series) error {
			for _, k := range keys {
				v, found := got[k]
				if !found {
					return fmt.Errorf("no series {%s}", k)
				}
				if math.IsNaN(v) || math.IsInf(v, 0) || !ok(v) {
					return fmt.Errorf("{%s} = %g, not what the cluster implies", k, v)
				}
			}
			return nil
		}
	}
}

// some wants a series whose labels start with prefix, with a finite value ok accepts.
func some(prefix string, ok func(float64) bool) func(series) error {
	return func(got series) error {
		for k, v := range got {
			if strings.HasPrefix(k, prefix) && !math.IsNaN(v) && !math.IsInf(v, 0) && ok(v) {
				return nil
			}
		}
		return fmt.Errorf("no series {%s...} with a value the cluster implies", prefix)
	}
}

func positive(v float64) bool { return v > 0 }

func atLeast(min float64) func(float64) bool { return func(v float64) bool { return v >= min } }

func between(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v >= lo && v <= hi }
}

// waitAttached waits until node has (or has no) attached VolumeAttachment.
func waitAttached(t *testing.T, ctx context.Context, node string, attached bool) {
	t.Helper()
	client := framework.Get(t).Client
	deadline := time.Now().Add(15 * time.Second)
	for {
		vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, va := range vas.Items {
			found = found || (va.Spec.NodeName == node && va.Status.Attached)
		}
		if found == attached {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: attached VolumeAttachment %v after 15s, want %v", node, found, attached)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
