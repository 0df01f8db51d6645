package rollout_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

// fixtureWithKubelets is the fixture with Node objects carrying kubelet versions.
func fixtureWithKubelets() rollout.Report {
	view := rollouttest.Fixture()
	for i := range view.Nodes {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: view.Nodes[i].Name}}
		n.Status.NodeInfo.KubeletVersion = "v1.36.3"
		view.Nodes[i].Node = n
	}
	view.Nodes[2].Node.Status.NodeInfo.KubeletVersion = "v1.35.0"
	return rollout.FromController(view, rollouttest.Now)
}

func TestNodesView(t *testing.T) {
	r := fixtureWithKubelets()
	gce := "kubernetes.io/gce-pd"
	tests := []struct {
		name   string
		filter rollout.NodeFilter
		want   []string
	}{
		{"all", rollout.NodeFilter{}, []string{"node-a", "node-b", "node-c", "node-d"}},
		{"plugin only keeps every node", rollout.NodeFilter{Plugin: gce}, []string{"node-a", "node-b", "node-c", "node-d"}},
		{"migrated", rollout.NodeFilter{Plugin: gce, State: "migrated"}, []string{"node-a", "node-b"}},
		{"not migrated", rollout.NodeFilter{Plugin: gce, State: "not-migrated"}, []string{"node-c"}},
		{"not reported", rollout.NodeFilter{Plugin: gce, State: "unknown"}, []string{"node-d"}},
		{"aws-ebs migrated", rollout.NodeFilter{Plugin: "kubernetes.io/aws-ebs", State: "migrated"}, []string{"node-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.filter.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range r.NodesView(tt.filter).Nodes {
				got = append(got, n.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodes = %v, want %v", got, tt.want)
			}
		})
	}
	a := r.NodesView(rollout.NodeFilter{}).Nodes[0]
	wantA := rollout.NodeRollout{Name: "node-a", KubeletVersion: "v1.36.3", Source: rollout.NodeObjectCSINode,
		MigratedPlugins:    []string{"kubernetes.io/aws-ebs", gce},
		VolumesByMechanism: map[migration.Mechanism]int{"csi": 1, "csi-no-attach": 0, "in-tree": 0, "not-attachable": 1, "wait": 0, "error": 1}}
	states := a.States
	a.States = nil
	if !reflect.DeepEqual(a, wantA) {
		t.Errorf("node-a = %+v\nwant %+v", a, wantA)
	}
	if len(states) != 7 || states[gce] != "migrated" || states["kubernetes.io/cinder"] != "not-migrated" {
		t.Errorf("node-a states = %v", states)
	}
	if d := r.NodesView(rollout.NodeFilter{}).Nodes[3]; d.Source != rollout.NodeObjectNone || len(d.MigratedPlugins) != 0 || d.VolumesByMechanism["wait"] != 1 {
		t.Errorf("node-d = %+v", d)
	}
}

func TestNodeFilterValidate(t *testing.T) {
	tests := []struct {
		name    string
		filter  rollout.NodeFilter
		wantErr string
	}{
		{"empty", rollout.NodeFilter{}, ""},
		{"unknown plugin", rollout.NodeFilter{Plugin: "kubernetes.io/nfs"}, "not an in-tree plugin"},
		{"bad state", rollout.NodeFilter{Plugin: "kubernetes.io/gce-pd", State: "done"}, `state "done" is not valid`},
		{"state without plugin", rollout.NodeFilter{State: "migrated"}, "needs a plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.filter.Validate()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRenderNodesText(t *testing.T) {
	r := fixtureWithKubelets()
	var buf bytes.Buffer
	if err := rollout.RenderNodesText(&buf, r.NodesView(rollout.NodeFilter{Plugin: "kubernetes.io/gce-pd"})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4 of 4 shown (plugin kubernetes.io/gce-pd)\n",
		"NODE    KUBELET  REPORTS VIA  STATE (kubernetes.io/gce-pd)  VOLUMES\n",
		"node-a  v1.36.3  CSINode      migrated                      csi=1 not-attachable=1 error=1\n",
		"node-c  v1.35.0  CSINode      not-migrated                  csi-no-attach=1 in-tree=1\n",
		"node-d  v1.36.3  none         unknown                       wait=1\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}
