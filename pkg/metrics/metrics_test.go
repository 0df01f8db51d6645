package metrics

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

// newFixtureMetrics registers a fresh set in a fresh registry, reading the fixed view at the
// fixture's clock, with the fixture's operations and one forced detach observed.
func newFixtureMetrics(t *testing.T) (*Metrics, k8smetrics.KubeRegistry) {
	t.Helper()
	reg := k8smetrics.NewKubeRegistry()
	m := New()
	if err := m.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	view := rollouttest.Fixture()
	// kube-controller-manager's attach/detach controller seen writing: adc is fenced.
	view.Other = readmodel.OtherController{Fenced: true, Manager: "kube-controller-manager", Object: "VolumeAttachment",
		Writes: []readmodel.OtherControllerWrites{{Manager: "kube-controller-manager", Object: "VolumeAttachment", Count: 3}}}
	m.source.now = func() time.Time { return rollouttest.Now }
	m.SetSource(func() rollout.ControllerView { return view })
	for _, op := range view.Ops {
		m.OperationCompleted(op)
	}
	m.ForcedDetach(readmodel.ForcedDetachOutOfService)
	return m, reg
}

func gather(t *testing.T, g k8smetrics.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelNames(mf *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestRegisteredNamesAndLabels(t *testing.T) {
	_, reg := newFixtureMetrics(t)
	got := gather(t, reg)
	tests := []struct {
		name   string
		typ    dto.MetricType
		labels []string
	}{
		{TotalVolumesName, dto.MetricType_GAUGE, []string{"plugin_name", "state"}},
		{OperationDurationName, dto.MetricType_HISTOGRAM, []string{"migrated", "operation_name", "status", "volume_plugin"}},
		{ForcedDetachesName, dto.MetricType_COUNTER, []string{"reason"}},
		{NodesName, dto.MetricType_GAUGE, []string{"plugin", "state"}},
		{ModeName, dto.MetricType_GAUGE, []string{"mode", "plugin"}},
		{DecisionsName, dto.MetricType_GAUGE, []string{"mechanism", "plugin"}},
		{HeldPairsName, dto.MetricType_GAUGE, []string{"mechanism"}},
		{HeldOldestAgeName, dto.MetricType_GAUGE, []string{"mechanism"}},
		{HeldRetriesName, dto.MetricType_GAUGE, []string{"mechanism"}},
		{MultiAttachName, dto.MetricType_GAUGE, nil},
		{VersionSkewName, dto.MetricType_GAUGE, nil},
		{VolumesByPathName, dto.MetricType_GAUGE, []string{"path", "plugin"}},
		{CompleteReadyName, dto.MetricType_GAUGE, []string{"plugin"}},
		{CompleteBlockersName, dto.MetricType_GAUGE, []string{"kind", "plugin"}},
		{OtherControllerFencedName, dto.MetricType_GAUGE, nil},
		{OtherControllerWritesName, dto.MetricType_COUNTER, []string{"manager", "object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf := got[tt.name]
			if mf == nil {
				t.Fatalf("not gathered; have %v", keys(got))
			}
			if mf.GetType() != tt.typ {
				t.Errorf("type %s, want %s", mf.GetType(), tt.typ)
			}
			if l := labelNames(mf); !reflect.DeepEqual(l, tt.labels) {
				t.Errorf("labels %v, want %v", l, tt.labels)
			}
			if !strings.HasPrefix(mf.GetHelp(), "[ALPHA] ") {
				t.Errorf("help %q, want stability ALPHA", mf.GetHelp())
			}
		})
	}
	if len(got) != len(tests) {
		t.Errorf("gathered %v, want exactly the %d metrics above", keys(got), len(tests))
	}
}

func TestStateValues(t *testing.T) {
	_, reg := newFixtureMetrics(t)
	got := gather(t, reg)
	values := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, m := range got[name].GetMetric() {
			var parts []string
			for _, l := range m.GetLabel() {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[strings.Join(parts, ",")] = v
		}
		return out
	}
	tests := []struct {
		name string
		want map[string]float64
	}{
		{TotalVolumesName, map[string]float64{
			"plugin_name=kubernetes.io/aws-ebs,state=actual_state_of_world":                    0,
			"plugin_name=kubernetes.io/aws-ebs,state=desired_state_of_world":                   1,
			"plugin_name=kubernetes.io/csi:pd.csi.storage.gke.io,state=actual_state_of_world":  1,
			"plugin_name=kubernetes.io/csi:pd.csi.storage.gke.io,state=desired_state_of_world": 0,
			"plugin_name=kubernetes.io/gce-pd,state=actual_state_of_world":                     2,
			"plugin_name=kubernetes.io/gce-pd,state=desired_state_of_world":                    5,
		}},
		{DecisionsName, map[string]float64{
			"mechanism=csi,plugin=kubernetes.io/gce-pd":                       3,
			"mechanism=csi-no-attach,plugin=kubernetes.io/csi:nfs.csi.k8s.io": 1,
			"mechanism=error,plugin=kubernetes.io/aws-ebs":                    1,
			"mechanism=in-tree,plugin=kubernetes.io/gce-pd":                   1,
			"mechanism=not-attachable,plugin=kubernetes.io/configmap":         1,
			"mechanism=wait,plugin=kubernetes.io/gce-pd":                      1,
		}},
		{HeldPairsName, map[string]float64{"mechanism=wait": 1, "mechanism=error": 1, "mechanism=in-tree": 1}},
		{HeldOldestAgeName, map[string]float64{"mechanism=wait": 300, "mechanism=error": 90, "mechanism=in-tree": 30}},
		{HeldRetriesName, map[string]float64{"mechanism=wait": 5, "mechanism=error": 3, "mechanism=in-tree": 1}},
		{MultiAttachName, map[string]float64{"": 1}},
		{VersionSkewName, map[string]float64{"": 1}},
		{ForcedDetachesName, map[string]float64{"reason=out-of-service": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := values(tt.name); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
	nodes := values(NodesName)
	for key, want := range map[string]float64{
		"plugin=kubernetes.io/gce-pd,state=migrated": 2, "plugin=kubernetes.io/gce-pd,state=not-migrated": 1, "plugin=kubernetes.io/gce-pd,state=unknown": 1,
		"plugin=kubernetes.io/aws-ebs,state=migrated": 1, "plugin=kubernetes.io/aws-ebs,state=not-migrated": 2,
	} {
		if nodes[key] != want {
			t.Errorf("%s{%s} = %v, want %v", NodesName, key, nodes[key], want)
		}
	}
	if len(nodes) != 7*3 {
		t.Errorf("%s has %d series, want 3 states x 7 plugins", NodesName, len(nodes))
	}
	for _, tt := range []struct {
		name  string
		want  map[string]float64
		count int
	}{
		// gce-pd: 3 pairs through CSI, the in-tree pair on node-c (no attacher) and the wait
		// pair on node-d held; aws-ebs: its skew pair held.
		{VolumesByPathName, map[string]float64{
			"path=csi,plugin=kubernetes.io/gce-pd": 3, "path=in-tree,plugin=kubernetes.io/gce-pd": 0, "path=held,plugin=kubernetes.io/gce-pd": 2,
			"path=held,plugin=kubernetes.io/aws-ebs": 1, "path=csi,plugin=kubernetes.io/portworx-volume": 0}, 7 * 3},
		{CompleteReadyName, map[string]float64{"plugin=kubernetes.io/gce-pd": 0, "plugin=kubernetes.io/portworx-volume": 0}, 7},
		{CompleteBlockersName, map[string]float64{
			"kind=nodes,plugin=kubernetes.io/gce-pd": 2, "kind=volumes,plugin=kubernetes.io/gce-pd": 2,
			"kind=nodes,plugin=kubernetes.io/aws-ebs": 3, "kind=volumes,plugin=kubernetes.io/aws-ebs": 0,
			"kind=nodes,plugin=kubernetes.io/portworx-volume": 4}, 7 * 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := values(tt.name)
			for key, want := range tt.want {
				if v, ok := got[key]; !ok || v != want {
					t.Errorf("%s{%s} = %v (present %v), want %v", tt.name, key, v, ok, want)
				}
			}
			if len(got) != tt.count {
				t.Errorf("%s has %d series, want %d (bounded: plugins x label values)", tt.name, len(got), tt.count)
			}
		})
	}
	modes := values(ModeName)
	if modes["mode=off,plugin=kubernetes.io/aws-ebs"] != 1 || modes["mode=complete,plugin=kubernetes.io/portworx-volume"] != 1 || len(modes) != 7 {
		t.Errorf("%s = %v", ModeName, modes)
	}
}

func TestOperationHistogram(t *testing.T) {
	_, reg := newFixtureMetrics(t)
	tests := []struct {
		labels map[string]string
		count  int
		sum    float64
	}{
		{map[string]string{"volume_plugin": "kubernetes.io/gce-pd", "operation_name": "volume_attach", "status": "success", "migrated": "true"}, 1, 1.5},
		{map[string]string{"volume_plugin": "kubernetes.io/gce-pd", "operation_name": "volume_attach", "status": "fail-unknown", "migrated": "true"}, 1, 0.3},
		{map[string]string{"volume_plugin": "kubernetes.io/csi:nfs.csi.k8s.io", "operation_name": "volume_detach", "status": "success", "migrated": "false"}, 1, 2},
	}
	for _, tt := range tests {
		h, err := testutil.GetHistogramVecFromGatherer(reg, OperationDurationName, tt.labels)
		if err != nil {
			t.Fatalf("%v: %v", tt.labels, err)
		}
		if c, s := h.GetAggregatedSampleCount(), h.GetAggregatedSampleSum(); c != uint64(tt.count) || s != tt.sum {
			t.Errorf("%v: count %d sum %v, want %d and %v", tt.labels, c, s, tt.count, tt.sum)
		}
	}
	mf := gather(t, reg)[OperationDurationName]
	var bounds []float64
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if !reflect.DeepEqual(bounds, OperationBuckets) {
		t.Errorf("buckets %v, want upstream's %v", bounds, OperationBuckets)
	}
}

// TestStandbyExportsNoState: without a controller (standby, or before the first term) the
// state collectors export nothing, so sums across replicas count the leader once.
func TestStandbyExportsNoState(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	m := New()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, source := range []func() rollout.ControllerView{nil, func() rollout.ControllerView { return nil }} {
		m.SetSource(source)
		for name := range gather(t, reg) {
			t.Errorf("standby exports %s", name)
		}
	}
}

// TestHostAlreadyRegistered: a host (kube-controller-manager) that registered upstream's
// metrics first does not make registration fail, and adc's observations land in the host's
// metric when it is the same one.
func TestHostAlreadyRegistered(t *testing.T) {
	tests := []struct {
		name       string
		host       func() k8smetrics.Registerable
		wantCounts bool
	}{
		{"upstream BETA histogram", func() k8smetrics.Registerable { return newOperationDuration(k8smetrics.BETA) }, true},
		{"identical ALPHA histogram", func() k8smetrics.Registerable { return newOperationDuration(k8smetrics.ALPHA) }, true},
		{"same name, other labels", func() k8smetrics.Registerable {
			return k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{Name: OperationDurationName, Help: "other"}, []string{"x"})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := k8smetrics.NewKubeRegistry()
			host := tt.host()
			reg.MustRegister(host, newForcedDetaches())
			m := New()
			if err := m.Register(reg); err != nil {
				t.Fatalf("Register after the host: %v", err)
			}
			if err := New().Register(reg); err != nil {
				t.Fatalf("second Register: %v", err)
			}
			m.OperationCompleted(readmodel.Operation{Kind: readmodel.OperationAttach, Plugin: "kubernetes.io/gce-pd", Duration: time.Second})
			m.ForcedDetach(readmodel.ForcedDetachNotReady)
			if hv, ok := host.(*k8smetrics.HistogramVec); ok && tt.wantCounts {
				if n, err := testutil.GetHistogramMetricCount(hv.WithLabelValues("kubernetes.io/gce-pd", "volume_attach", "success", "false")); err != nil || n != 1 {
					t.Errorf("host histogram count = %d (%v), want adc's attach in it", n, err)
				}
			}
			vals, err := testutil.GetCounterValuesFromGatherer(reg, ForcedDetachesName, map[string]string{}, "reason")
			if err != nil || vals["timeout"] != 1 {
				t.Errorf("forced detaches = %v (%v), want adc's counted in the host's counter", vals, err)
			}
		})
	}
}

func TestLegacyIsRegisteredOnce(t *testing.T) {
	a, err := Legacy()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Legacy()
	if err != nil || a != b {
		t.Errorf("second Legacy() = %p, %v; want the same set %p", b, err, a)
	}
}

func TestPluginLabel(t *testing.T) {
	tests := []struct {
		pair readmodel.PairState
		want string
	}{
		{readmodel.PairState{Plugin: "kubernetes.io/gce-pd", Driver: "pd.csi.storage.gke.io"}, "kubernetes.io/gce-pd"},
		{readmodel.PairState{Plugin: "kubernetes.io/csi", Driver: "nfs.csi.k8s.io"}, "kubernetes.io/csi:nfs.csi.k8s.io"},
		{readmodel.PairState{Driver: "pd.csi.storage.gke.io"}, "kubernetes.io/csi:pd.csi.storage.gke.io"},
		{readmodel.PairState{}, "N/A"},
	}
	for _, tt := range tests {
		if got := PluginLabel(&tt.pair); got != tt.want {
			t.Errorf("PluginLabel(%+v) = %s, want %s", tt.pair, got, tt.want)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// adc_other_controller_fenced and _writes_total say what the view saw of another
// attach/detach controller.
func TestOtherControllerMetrics(t *testing.T) {
	_, reg := newFixtureMetrics(t)
	want := `
# HELP adc_other_controller_fenced [ALPHA] 1 while adc attaches, detaches and writes node status not at all because another attach/detach controller writes what adc owns (Event reason OtherAttachDetachController), else 0.
# TYPE adc_other_controller_fenced gauge
adc_other_controller_fenced 1
# HELP adc_other_controller_writes_total [ALPHA] Writes of another attach/detach controller adc saw since it started leading, by field manager and object (Node/status.volumesAttached, VolumeAttachment).
# TYPE adc_other_controller_writes_total counter
adc_other_controller_writes_total{manager="kube-controller-manager",object="VolumeAttachment"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), OtherControllerFencedName, OtherControllerWritesName); err != nil {
		t.Error(err)
	}
}
