package dashboard_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

// kubeletFixture is the fixture with kubelet versions on its nodes.
func kubeletFixture(version string) rollout.Report {
	view := rollouttest.Fixture()
	for i := range view.Nodes {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: view.Nodes[i].Name}}
		n.Status.NodeInfo.KubeletVersion = version
		view.Nodes[i].Node = n
	}
	return rollout.FromController(view, rollouttest.Now)
}

func TestNodesPageFilters(t *testing.T) {
	ts := newServer(t, kubeletFixture("v1.36.3"))
	tests := []struct {
		name, query string
		nodes       []string
	}{
		{"all", "", []string{"node-a", "node-b", "node-c", "node-d"}},
		{"gce-pd", "?plugin=kubernetes.io/gce-pd", []string{"node-a", "node-b", "node-c", "node-d"}},
		{"gce-pd migrated", "?plugin=kubernetes.io/gce-pd&state=migrated", []string{"node-a", "node-b"}},
		{"gce-pd not migrated", "?plugin=kubernetes.io%2Fgce-pd&state=not-migrated", []string{"node-c"}},
		{"gce-pd not reported", "?plugin=kubernetes.io/gce-pd&state=unknown", []string{"node-d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, page := get(t, ts.URL+"/dashboard/nodes"+tt.query)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /dashboard/nodes%s = %d", tt.query, resp.StatusCode)
			}
			if got := texts(t, page, map[string]string{"data-field": "name"}); !reflect.DeepEqual(got, tt.nodes) {
				t.Errorf("page nodes = %q, want %q", got, tt.nodes)
			}
			_, body := get(t, ts.URL+"/dashboard/api/v1/nodes"+tt.query)
			var nr rollout.NodesReport
			if err := json.Unmarshal([]byte(body), &nr); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range nr.Nodes {
				names = append(names, n.Name)
			}
			if !reflect.DeepEqual(names, tt.nodes) || nr.NodesManaged != 4 {
				t.Errorf("JSON nodes = %q of %d, want %q of 4", names, nr.NodesManaged, tt.nodes)
			}
		})
	}
	_, page := get(t, ts.URL+"/dashboard/nodes?plugin=kubernetes.io/gce-pd")
	a := one(t, page, map[string]string{"data-node": "node-a"})
	for _, want := range []string{"v1.36.3", "CSINode", "migrated", "kubernetes.io/aws-ebs, kubernetes.io/gce-pd"} {
		if !strings.Contains(a, want) {
			t.Errorf("node-a row %q lacks %q", a, want)
		}
	}
	if got := texts(t, page, map[string]string{"data-field": "volumes-csi"}); !reflect.DeepEqual(got, []string{"1", "2", "0", "0"}) {
		t.Errorf("csi volumes per node = %q", got)
	}
	if got := texts(t, page, map[string]string{"data-field": "source"}); !reflect.DeepEqual(got, []string{"CSINode", "CSINode", "CSINode", "none"}) {
		t.Errorf("sources = %q", got)
	}
}

func TestNodesBadFilter(t *testing.T) {
	ts := newServer(t, fixtureReport())
	for _, q := range []string{"?plugin=kubernetes.io/nfs", "?state=migrated", "?plugin=kubernetes.io/gce-pd&state=done"} {
		for _, path := range []string{"/dashboard/nodes", "/dashboard/api/v1/nodes"} {
			if resp, body := get(t, ts.URL+path+q); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "bad node filter") {
				t.Errorf("GET %s%s = %d %q, want 400", path, q, resp.StatusCode, body)
			}
		}
	}
}

// TestNodesPageEscapes: the kubelet version (a node's status, written by whoever runs the
// kubelet) and the node name are shown as text.
func TestNodesPageEscapes(t *testing.T) {
	r := kubeletFixture(rollouttest.Script)
	r.Nodes[0].Name = "node-a" + rollouttest.Script
	_, page := get(t, newServer(t, r).URL+"/dashboard/nodes")
	if strings.Contains(page, rollouttest.Script) {
		t.Fatal("the raw script reached the node view")
	}
	if got := one(t, page, map[string]string{"data-node": "node-a" + rollouttest.Script}); strings.Count(got, rollouttest.Script) != 2 {
		t.Errorf("node row %q does not show the name and the kubelet version as text", got)
	}
	_, body := get(t, newServer(t, r).URL+"/dashboard/api/v1/nodes")
	if strings.Contains(body, "<script>") {
		t.Error("the node JSON does not escape the script")
	}
}
