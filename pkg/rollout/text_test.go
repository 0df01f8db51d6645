package rollout_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
)

func TestBar(t *testing.T) {
	tests := []struct {
		migrated, total int
		want            string
	}{
		{0, 0, "[----------]"},
		{0, 6, "[----------]"},
		{3, 6, "[#####-----]"},
		{5, 6, "[########--]"},
		{99, 100, "[#########-]"},
		{6, 6, "[##########]"},
	}
	for _, tt := range tests {
		if got := rollout.Bar(tt.migrated, tt.total); got != tt.want {
			t.Errorf("Bar(%d, %d) = %s, want %s", tt.migrated, tt.total, got, tt.want)
		}
	}
}

func TestRenderText(t *testing.T) {
	v := rollouttest.Fixture()
	v.Pairs[2].Reason = "line one\nforged line\x1b[31m"
	var buf bytes.Buffer
	if err := rollout.RenderText(&buf, rollout.FromController(v, rollouttest.Now)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"CSI migration rollout (source controller, node source csinode, 4 managed nodes) at 2026-01-02T03:04:05Z\n",
		"kubernetes.io/gce-pd           on        [#####-----] 2/4 migrated, 1 not, 1 unknown      volumes csi=3 in-tree=0 held=2  not ready for complete: 2 nodes, 2 volumes\n",
		"kubernetes.io/aws-ebs          off       [##--------] 1/4 migrated, 2 not, 1 unknown      volumes csi=0 in-tree=0 held=1  not ready for complete: 3 nodes, 0 volumes\n",
		// A complete plugin shows its lagging kubelets as skew, not as a 0% bar.
		"kubernetes.io/portworx-volume  complete  skew: 4/4 nodes not migrated (3 not, 1 unknown)  volumes csi=0 in-tree=0 held=0  complete\n",
		"Volumes by mechanism: csi=3 csi-no-attach=1 in-tree=1 not-attachable=1 wait=1 error=1 (8 pairs)\n",
		"Held: 3 (in-tree=1 wait=1 error=1)\n",
		"  error node-a web/app-0 cache: line one forged line [31m\n",
		"Problems: 2\n",
		"  multi-attach node-b web/app-2 data: volume is ReadWriteOnce",
		"note: node node-b: CSINode",
		"Recent operations: 3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRenderCheckComplete(t *testing.T) {
	notReady := rollout.FromController(rollouttest.Fixture(), rollouttest.Now)
	ready := rollouttest.Fixture()
	ready.Nodes = ready.Nodes[:2]
	ready.Pairs = ready.Pairs[:5] // the pairs of node-a and node-b
	readyReport := rollout.FromController(ready, rollouttest.Now)
	hostile := rollouttest.Fixture()
	hostile.Nodes[3].Name = "node-d\nforged: safe to switch"
	tests := []struct {
		name   string
		report rollout.Report
		plugin string
		want   []string
	}{
		{"blockers listed", notReady, "kubernetes.io/gce-pd", []string{
			"kubernetes.io/gce-pd (mode on): not safe to switch to complete: 2 of 4 managed nodes have not reported it migrated and 2 volumes would change path",
			"\n  node node-c: not-migrated (its kubelet still uses the in-tree plugin)\n",
			"\n  node node-d: unknown (no CSINode or CSINodeInfo yet: it has not reported)\n",
			"\n  volume web/app-1 cache (pv pv-c) on node node-c: in-tree -> csi\n",
			"\n  volume db/pg-2 data (pv pv-d) on node node-d: wait -> csi\n",
		}},
		{"safe", readyReport, "kubernetes.io/gce-pd", []string{
			"kubernetes.io/gce-pd (mode on): safe to switch to complete: all 2 managed nodes report it migrated and all 3 of its volumes already go through CSI\n",
		}},
		{"complete with lagging kubelets", notReady, "kubernetes.io/portworx-volume", []string{
			"(mode complete): not safe: the mode is complete but 4 of 4 managed nodes have not reported it migrated (version skew",
		}},
		{"a node name cannot forge a line", rollout.FromController(hostile, rollouttest.Now), "kubernetes.io/gce-pd", []string{
			"\n  node node-d forged: safe to switch: unknown",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := tt.report.Plugin(tt.plugin)
			if !ok {
				t.Fatalf("no plugin %s", tt.plugin)
			}
			var buf bytes.Buffer
			if err := rollout.RenderCheckComplete(&buf, p); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, buf.String())
				}
			}
		})
	}
}
