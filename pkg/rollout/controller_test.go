package rollout_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

// The controller is a ControllerView; checked here because the package does not import it.
var _ rollout.ControllerView = (*adc.Controller)(nil)

func plugin(t *testing.T, r rollout.Report, name string) rollout.PluginRollout {
	t.Helper()
	for _, p := range r.Plugins {
		if p.Plugin == name {
			return p
		}
	}
	t.Fatalf("no plugin %s in %+v", name, r.Plugins)
	return rollout.PluginRollout{}
}

func TestFromControllerPlugins(t *testing.T) {
	r := rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
	if r.Source != rollout.SourceController || r.Standby || !r.GeneratedAt.Equal(rollouttest.Now) || r.NodesManaged != 4 || r.NodeSource != migration.NodeSourceCSINode {
		t.Errorf("header = source %s standby %v at %s managed %d nodeSource %s", r.Source, r.Standby, r.GeneratedAt, r.NodesManaged, r.NodeSource)
	}
	if len(r.Plugins) != len(migration.MigratablePlugins) {
		t.Fatalf("%d plugins, want one per migratable plugin", len(r.Plugins))
	}
	tests := []rollout.PluginRollout{
		{Plugin: "kubernetes.io/gce-pd", Driver: "pd.csi.storage.gke.io", Mode: migration.ModeOn, NodesMigrated: 2, NodesNotMigrated: 1, NodesUnknown: 1, NodesTotal: 4},
		{Plugin: "kubernetes.io/aws-ebs", Driver: "ebs.csi.aws.com", Mode: migration.ModeOff, NodesMigrated: 1, NodesNotMigrated: 2, NodesUnknown: 1, NodesTotal: 4},
		{Plugin: "kubernetes.io/portworx-volume", Driver: "pxd.portworx.com", Mode: migration.ModeComplete, NodesMigrated: 0, NodesNotMigrated: 3, NodesUnknown: 1, NodesTotal: 4},
	}
	for _, want := range tests {
		t.Run(want.Plugin, func(t *testing.T) {
			if got := nodeCounts(plugin(t, r, want.Plugin)); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestFromControllerPairs(t *testing.T) {
	r := rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
	want := map[migration.Mechanism]int{"csi": 3, "csi-no-attach": 1, "in-tree": 1, "not-attachable": 1, "wait": 1, "error": 1}
	if !reflect.DeepEqual(r.VolumesByMechanism, want) {
		t.Errorf("volumesByMechanism = %v, want %v (the attachment no pod needs is not a decision)", r.VolumesByMechanism, want)
	}
	var held []string
	for _, h := range r.Held {
		held = append(held, h.Node+" "+h.Pod+" "+h.Volume+" "+string(h.Mechanism))
	}
	if w := []string{"node-a web/app-0 cache error", "node-c web/app-1 cache in-tree", "node-d db/pg-2 data wait"}; !reflect.DeepEqual(held, w) {
		t.Errorf("held = %q, want %q", held, w)
	}
	wait := r.Held[2]
	if wait.Retries != 5 || wait.NextRetry == nil || !wait.NextRetry.Equal(rollouttest.Now.Add(10*time.Second)) ||
		wait.Since == nil || !wait.Since.Equal(rollouttest.Now.Add(-5*time.Minute)) || wait.PV != "pv-d" || !strings.Contains(wait.Reason, "does not exist yet") {
		t.Errorf("wait pair = %+v", wait)
	}
	var problems []string
	for _, p := range r.Problems {
		problems = append(problems, string(p.Kind)+" "+p.Node+" "+p.Pod+" "+p.Volume)
	}
	if w := []string{"version-skew node-a web/app-0 cache", "multi-attach node-b web/app-2 data"}; !reflect.DeepEqual(problems, w) {
		t.Errorf("problems = %q, want %q", problems, w)
	}
	if len(r.Notes) != 1 || r.Notes[0].Node != "node-b" || !strings.Contains(r.Notes[0].Message, rollouttest.Script) {
		t.Errorf("notes = %+v, want one for node-b quoting the unknown plugin name", r.Notes)
	}
}

func TestFromControllerOperations(t *testing.T) {
	v := rollouttest.Fixture()
	r := rollout.FromController(v, rollouttest.Now)
	if len(r.Operations) != 3 {
		t.Fatalf("%d operations, want 3", len(r.Operations))
	}
	first := r.Operations[0]
	want := rollout.OperationRecord{Kind: "attach", Node: "node-b", Volume: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-b", Plugin: "kubernetes.io/gce-pd",
		Migrated: true, DurationSeconds: 0.3, Error: "rpc error: code = Internal desc = " + rollouttest.Script, Time: rollouttest.Now.Add(-20*time.Second + 300*time.Millisecond)}
	if first != want {
		t.Errorf("operation = %+v\nwant %+v", first, want)
	}

	// A busy controller's ring is cut to MaxOperations, newest first.
	v.Ops = nil
	for i := 0; i < rollout.MaxOperations+20; i++ {
		v.Ops = append(v.Ops, readmodel.Operation{Kind: readmodel.OperationAttach, Node: "n", Started: rollouttest.Now.Add(-time.Duration(i) * time.Second)})
	}
	r = rollout.FromController(v, rollouttest.Now)
	if len(r.Operations) != rollout.MaxOperations || !r.Operations[0].Time.Equal(rollouttest.Now) {
		t.Errorf("%d operations (first at %s), want %d newest first", len(r.Operations), r.Operations[0].Time, rollout.MaxOperations)
	}
}

func TestStandby(t *testing.T) {
	r := rollout.Standby(migration.DefaultConfig(), rollouttest.Now)
	if !r.Standby || !strings.Contains(r.Message, "standby") || len(r.Plugins) != 7 || r.Held == nil || r.Operations == nil || len(r.VolumesByMechanism) != 6 {
		t.Errorf("standby report = %+v", r)
	}
}

// TestJSONShape pins the documented key set of docs/rollout-api.md.
func TestJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := rollout.RenderJSON(&buf, rollout.FromController(rollouttest.Fixture(), rollouttest.Now)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	tests := []struct {
		name string
		obj  any
		keys []string
	}{
		{"report", doc, []string{"generatedAt", "held", "message", "nodeLoss", "nodeSource", "nodesManaged", "notes", "operations", "plugins", "problems", "recentFlips", "source", "standby", "underWay", "volumesByMechanism"}},
		{"plugin", doc["plugins"].([]any)[0], []string{"driver", "mode", "nodesMigrated", "nodesNotMigrated", "nodesTotal", "nodesUnknown", "plugin", "readiness", "volumesByPath"}},
		{"volumesByPath", doc["plugins"].([]any)[0].(map[string]any)["volumesByPath"], []string{"csi", "held", "inTree", "total"}},
		{"readiness", doc["plugins"].([]any)[0].(map[string]any)["readiness"], []string{"nodesNotMigrated", "ready", "volumesChangingPath"}},
		{"held", doc["held"].([]any)[0], []string{"mechanism", "nextRetry", "node", "plugin", "pod", "pv", "reason", "retries", "since", "volume"}},
		{"problem", doc["problems"].([]any)[0], []string{"kind", "node", "pod", "reason", "volume"}},
		{"note", doc["notes"].([]any)[0], []string{"message", "node"}},
		{"operation", doc["operations"].([]any)[0], []string{"durationSeconds", "error", "kind", "migrated", "node", "plugin", "time", "volume"}},
		{"flip", doc["recentFlips"].([]any)[0], []string{"migrated", "node", "plugin", "time"}},
		{"volumesByMechanism", doc["volumesByMechanism"], []string{"csi", "csi-no-attach", "error", "in-tree", "not-attachable", "wait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keys(tt.obj.(map[string]any)); !reflect.DeepEqual(got, tt.keys) {
				t.Errorf("keys = %v, want %v", got, tt.keys)
			}
		})
	}
	if doc["generatedAt"] != "2026-01-02T03:04:05Z" || doc["source"] != "controller" {
		t.Errorf("generatedAt %v source %v", doc["generatedAt"], doc["source"])
	}

	// Unknown times are null; empty lists are [] rather than null.
	buf.Reset()
	r := rollout.Standby(migration.DefaultConfig(), rollouttest.Now)
	r.Held = []rollout.HeldPair{{Node: "n"}}
	if err := rollout.RenderJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"nextRetry": null`, `"since": null`, `"operations": []`, `"problems": []`, `"notes": []`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, buf.String())
		}
	}
	// Even a zero report has the documented shape.
	buf.Reset()
	if err := rollout.RenderJSON(&buf, rollout.Report{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"plugins": []`, `"held": []`, `"operations": []`, `"wait": 0`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("zero report JSON lacks %s:\n%s", s, buf.String())
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeCounts is the node-count part of a plugin's rollout, for comparing with literals.
func nodeCounts(p rollout.PluginRollout) rollout.PluginRollout {
	return rollout.PluginRollout{Plugin: p.Plugin, Driver: p.Driver, Mode: p.Mode,
		NodesMigrated: p.NodesMigrated, NodesNotMigrated: p.NodesNotMigrated, NodesUnknown: p.NodesUnknown, NodesTotal: p.NodesTotal}
}
