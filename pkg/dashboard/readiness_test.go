package dashboard_test

import (
	"strings"
	"testing"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

func TestPageVolumesByPathAndReadiness(t *testing.T) {
	_, page := get(t, newServer(t, fixtureReport()).URL+"/dashboard/")
	gce, ebs, px := "kubernetes.io/gce-pd", "kubernetes.io/aws-ebs", "kubernetes.io/portworx-volume"
	tests := []struct {
		plugin, field, want string
	}{
		{gce, "volumesCSI", "3"},
		{gce, "volumesTotal", "5"},
		{gce, "volumesInTree", "0"},
		{gce, "volumesHeld", "2"},
		{ebs, "volumesHeld", "1"},
		{gce, "readiness", "not ready"},
		{gce, "verdict", "not safe yet"},
		{gce, "blockingNodes", "2"},
		{gce, "changingVolumes", "2"},
		{ebs, "blockingNodes", "3"},
		{ebs, "changingVolumes", "0"},
		// A complete plugin with kubelets that lag: a skew warning, not a 0% bar.
		{px, "readiness", "complete"},
		{px, "skewNodes", "4"},
		{px, "verdict", "complete, skew"},
	}
	for _, tt := range tests {
		t.Run(tt.plugin+"/"+tt.field, func(t *testing.T) {
			if got := one(t, page, map[string]string{"data-plugin": tt.plugin, "data-field": tt.field}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := one(t, page, map[string]string{"data-plugin": px, "data-field": "skew"}); !strings.Contains(got, "4 of 4 nodes not migrated") {
		t.Errorf("portworx skew warning = %q", got)
	}
	row := page[strings.Index(page, `<tr data-plugin="`+px+`">`):]
	if row = row[:strings.Index(row, "</tr>")]; strings.Contains(row, "<svg") {
		t.Errorf("the complete plugin still has a rollout bar:\n%s", row)
	}
	// gce-pd, aws-ebs and portworx are in play; node-d has reported none of them.
	if blockers := texts(t, page, map[string]string{"data-blocker-node": "node-d", "data-state": "unknown"}); len(blockers) != 3 {
		t.Errorf("node-d is listed as unknown %d times, want once per plugin in play (3): %q", len(blockers), blockers)
	}
	change := one(t, page, map[string]string{"data-changing-node": "node-c", "data-changing-pod": "web/app-1", "data-changing-volume": "cache"})
	for _, want := range []string{"pv-c", "in-tree", "csi"} {
		if !strings.Contains(change, want) {
			t.Errorf("path change row %q lacks %q", change, want)
		}
	}
	if got := one(t, page, map[string]string{"id": "not-started"}); !strings.Contains(got, "kubernetes.io/cinder") || strings.Contains(got, gce) {
		t.Errorf("not started = %q, want the plugins without nodes or volumes", got)
	}
}

// TestReadinessEscapesClusterData: node, pod, volume and PV names in the readiness panel are
// user-controlled and shown as text.
func TestReadinessEscapesClusterData(t *testing.T) {
	view := rollouttest.Fixture()
	view.Nodes[3].Name = "node-d" + rollouttest.Script // the blocker row
	view.Pairs[8].Node = view.Nodes[3].Name
	view.Pairs[8].Pod = "db/" + rollouttest.Script // the path change row
	view.Pairs[8].Volume = rollouttest.Script
	view.Pairs[8].PV = rollouttest.Script
	_, page := get(t, newServer(t, rollout.FromController(view, rollouttest.Now)).URL+"/dashboard/")
	if strings.Contains(page, rollouttest.Script) {
		t.Fatalf("the raw script reached the page")
	}
	change := one(t, page, map[string]string{"data-changing-pod": "db/" + rollouttest.Script})
	if strings.Count(change, rollouttest.Script) != 4 {
		t.Errorf("path change row %q does not show node, pod, volume and PV as text", change)
	}
	if got := texts(t, page, map[string]string{"data-blocker-node": view.Nodes[3].Name}); len(got) == 0 || !strings.Contains(got[0], rollouttest.Script) {
		t.Errorf("blocker rows = %q, want the node name shown as text", got)
	}
}
