package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

const boardPath = "../../deploy/grafana/migration-rollout.json"

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "e": true}
)

// metricNames extracts the metric names of a PromQL expression: what is left once strings,
// label matchers, ranges and grouping clauses are removed, minus functions (followed by a
// parenthesis), aggregation keywords and numbers.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, m := range promIdent.FindAllStringSubmatch(s, -1) {
		name := m[0]
		if m[1] != "" || promKeywords[strings.ToLower(name)] {
			continue // a function call or a keyword
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNamesParser(t *testing.T) {
	got := metricNames(`histogram_quantile(0.9, sum by (le, migrated) (rate(storage_operation_duration_seconds_bucket{operation_name="volume_attach"}[$__rate_interval]))) / clamp_min(sum(foo:bar) without (x), 1e-9) > bool 2`)
	if want := []string{"storage_operation_duration_seconds_bucket", "foo:bar"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("metricNames = %v, want %v", got, want)
	}
}

// TestGrafanaBoardQueriesRegisteredMetrics: every metric the board queries is one adc
// registers (gathered from the legacy registry once the controller's metrics are set up).
func TestGrafanaBoardQueriesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.FromSlash(boardPath))
	if err != nil {
		t.Fatal(err)
	}
	var board map[string]any
	if err := json.Unmarshal(data, &board); err != nil {
		t.Fatalf("%s is not valid JSON: %v", boardPath, err)
	}
	if board["uid"] == "" || board["title"] == "" {
		t.Errorf("board has no uid or title")
	}

	// What the controller process registers: the legacy set reading a controller, with an
	// operation and a forced detach observed, and a controller's named work queues.
	m, err := Legacy()
	if err != nil {
		t.Fatal(err)
	}
	view := rollouttest.Fixture()
	m.SetSource(func() rollout.ControllerView { return view })
	defer m.SetSource(nil)
	m.OperationCompleted(readmodel.Operation{Kind: readmodel.OperationAttach, Plugin: "kubernetes.io/gce-pd", Duration: time.Second})
	m.ForcedDetach(readmodel.ForcedDetachNodeDeleted)
	m.NodeFlip("kubernetes.io/gce-pd")
	client := fake.NewClientset()
	if _, err := adc.New(client, nil, informers.NewSharedInformerFactory(client, 0), adc.Options{}); err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for name, mf := range gather(t, legacyregistry.DefaultGatherer) {
		registered[name] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				registered[name+suffix] = true
			}
		}
	}

	exprList := BoardQueries(board)
	if len(exprList) < 10 {
		t.Fatalf("found only %d expressions in the board", len(exprList))
	}
	used := map[string]bool{}
	for _, e := range exprList {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("no metric in expression %q", e)
		}
		for _, n := range names {
			used[n] = true
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
		if !registered[n] {
			t.Errorf("the board queries %s, which adc does not register", n)
		}
	}
	sort.Strings(names)
	t.Logf("the board queries %d metrics: %s", len(names), strings.Join(names, ", "))
	for _, want := range []string{NodesName, HeldPairsName, OperationDurationName + "_bucket", OperationDurationName + "_count",
		VolumesByPathName, CompleteReadyName, CompleteBlockersName, NodeFlipsName} {
		if !used[want] {
			t.Errorf("the board does not chart %s", want)
		}
	}
}
