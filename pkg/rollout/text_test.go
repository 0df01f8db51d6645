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
		"kubernetes.io/gce-pd           on        [#####-----] 2/4 migrated, 1 not, 1 unknown\n",
		"kubernetes.io/aws-ebs          off       [##--------] 1/4 migrated, 2 not, 1 unknown\n",
		"kubernetes.io/portworx-volume  complete  [----------] 0/4 migrated, 3 not, 1 unknown\n",
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
