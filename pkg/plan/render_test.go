package plan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/migration-aware/adc/pkg/migration"
)

func fixedReport() Report {
	return NewReport([]Row{
		{Pod: "db/pg-0", Volume: "data", PV: "pv-gce", Node: "node-b", Plugin: "kubernetes.io/gce-pd", Driver: "pd.csi.storage.gke.io",
			VolumeHandle: "projects/UNSPECIFIED/zones/us-central1-a/disks/pd-1", UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/us-central1-a/disks/pd-1",
			Mechanism: migration.MechanismCSI, Reason: "migrated", VolumeAttachment: "csi-abc"},
		{Pod: "db/pg-0", Volume: "config", Node: "node-b", Plugin: "kubernetes.io/configmap", Mechanism: migration.MechanismNotAttachable, Reason: "no attach phase"},
		{Pod: "web/app-1", Volume: "cache", Node: "node-a", Mechanism: migration.MechanismWait, Reason: "claim\tnot bound\nyet",
			Notes: []string{"unknown plugin name \"x\""}},
	})
}

func TestNewReportSortsAndCountsAllMechanisms(t *testing.T) {
	r := fixedReport()
	var order []string
	for _, row := range r.Decisions {
		order = append(order, row.Node+" "+row.Pod+" "+row.Volume)
	}
	want := []string{"node-a web/app-1 cache", "node-b db/pg-0 config", "node-b db/pg-0 data"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
	if len(r.Summary) != 6 {
		t.Errorf("summary has %d keys, want all 6 mechanisms: %v", len(r.Summary), r.Summary)
	}
	if r.Summary[migration.MechanismCSI] != 1 || r.Summary[migration.MechanismWait] != 1 || r.Summary[migration.MechanismError] != 0 {
		t.Errorf("summary = %v", r.Summary)
	}
	if empty := NewReport(nil); empty.Decisions == nil || len(empty.Summary) != 6 {
		t.Errorf("empty report = %+v", empty)
	}
}

func TestRenderTable(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderTable(&buf, fixedReport()); err != nil {
		t.Fatal(err)
	}
	want := `NODE    POD        VOLUME  PLUGIN                   DRIVER                 MECHANISM       REASON
node-a  web/app-1  cache   -                        -                      wait            claim not bound yet
node-b  db/pg-0    config  kubernetes.io/configmap  -                      not-attachable  no attach phase
node-b  db/pg-0    data    kubernetes.io/gce-pd     pd.csi.storage.gke.io  csi             migrated
Summary: 3 decisions: csi=1 csi-no-attach=0 in-tree=0 not-attachable=1 wait=1 error=0
note: unknown plugin name "x"
`
	if got := buf.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderJSON(&buf, fixedReport()); err != nil {
		t.Fatal(err)
	}
	// Decode generically to check the exact key set of the public contract.
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, buf.String())
	}
	if len(doc) != 2 {
		t.Errorf("top-level keys = %v, want decisions and summary", keys(doc))
	}
	decisions := doc["decisions"].([]any)
	if len(decisions) != 3 {
		t.Fatalf("%d decisions, want 3", len(decisions))
	}
	wantKeys := []string{"driver", "mechanism", "node", "plugin", "pod", "pv", "reason", "uniqueName", "volume", "volumeAttachment", "volumeHandle"}
	for _, d := range decisions {
		if got := keys(d.(map[string]any)); !reflect.DeepEqual(got, wantKeys) {
			t.Errorf("decision keys = %v, want %v", got, wantKeys)
		}
	}
	last := decisions[2].(map[string]any)
	if last["pod"] != "db/pg-0" || last["volume"] != "data" || last["pv"] != "pv-gce" || last["mechanism"] != "csi" || last["volumeAttachment"] != "csi-abc" {
		t.Errorf("decision = %v", last)
	}
	if first := decisions[0].(map[string]any); first["pv"] != "" || first["driver"] != "" || first["volumeAttachment"] != "" {
		t.Errorf("empty fields must be present as empty strings: %v", first)
	}
	summary := doc["summary"].(map[string]any)
	want := map[string]any{"csi": 1.0, "csi-no-attach": 0.0, "in-tree": 0.0, "not-attachable": 1.0, "wait": 1.0, "error": 0.0}
	if !reflect.DeepEqual(summary, want) {
		t.Errorf("summary = %v, want %v", summary, want)
	}

	buf.Reset()
	if err := RenderJSON(&buf, Report{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"decisions": []`) || !strings.Contains(buf.String(), `"error": 0`) {
		t.Errorf("empty report JSON = %s", buf.String())
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
