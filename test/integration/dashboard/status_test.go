package dashboard

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/integration/framework"
)

// runStatus runs `adc status` against the test control plane with the controller's flags.
func runStatus(t *testing.T, output string) string {
	t.Helper()
	cmd := exec.Command(adcBinary, "status", "--kubeconfig", framework.Get(t).KubeconfigPath,
		"--migration", "kubernetes.io/aws-ebs=off", "-o", output)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("adc status -o %s: %v\n%s", output, err, stderr.String())
	}
	return stdout.String()
}

// testStatus checks that `adc status`, computed from the cluster without the controller,
// shows the rollout the controller shows.
func testStatus(t *testing.T, rc *rolloutCluster) {
	start := time.Now()
	out := runStatus(t, "json")
	t.Logf("adc status -o json took %s", time.Since(start).Round(time.Millisecond))
	var fromCluster rollout.Report
	if err := json.Unmarshal([]byte(out), &fromCluster); err != nil {
		t.Fatalf("adc status -o json is not a rollout report: %v\n%s", err, out)
	}
	fromController := rollout.FromController(rc.ctrl, time.Now())
	if fromCluster.Source != rollout.SourceCluster || fromCluster.NodesManaged != 4 {
		t.Errorf("source %s, %d managed nodes; want cluster and 4", fromCluster.Source, fromCluster.NodesManaged)
	}
	if !reflect.DeepEqual(fromCluster.Plugins, fromController.Plugins) {
		t.Errorf("plugins from the cluster:\n%+v\nfrom the controller:\n%+v", fromCluster.Plugins, fromController.Plugins)
	}
	if !reflect.DeepEqual(fromCluster.VolumesByMechanism, fromController.VolumesByMechanism) {
		t.Errorf("volumes by mechanism from the cluster %v, from the controller %v", fromCluster.VolumesByMechanism, fromController.VolumesByMechanism)
	}
	problems := func(r rollout.Report) []string {
		var out []string
		for _, p := range r.Problems {
			out = append(out, string(p.Kind)+" "+p.Node+" "+p.Pod+" "+p.Volume)
		}
		sort.Strings(out)
		return out
	}
	if a, b := problems(fromCluster), problems(fromController); !reflect.DeepEqual(a, b) {
		t.Errorf("problems from the cluster %q, from the controller %q", a, b)
	}
	// From the cluster, held means wait and error; the controller also holds the in-tree pair
	// because it has no in-tree attacher.
	var held []string
	for _, h := range fromCluster.Held {
		held = append(held, string(h.Mechanism)+" "+h.Node)
	}
	sort.Strings(held)
	if want := []string{"error " + rc.migrated, "wait " + rc.unknown}; !reflect.DeepEqual(held, want) {
		t.Errorf("held from the cluster %q, want %q", held, want)
	}
	if len(fromCluster.Operations) != 0 || len(fromCluster.Notes) != 1 || !strings.Contains(fromCluster.Notes[0].Message, script) {
		t.Errorf("operations %d (want none), notes %+v (want the hostile annotation's)", len(fromCluster.Operations), fromCluster.Notes)
	}

	text := runStatus(t, "text")
	for _, want := range []string{
		"(source cluster, node source csinode, 4 managed nodes)",
		"[#####-----] 2/4 migrated, 1 not, 1 unknown",
		"Volumes by mechanism: csi=4 csi-no-attach=0 in-tree=1 not-attachable=1 wait=1 error=1 (8 pairs)",
		"Held: 2 (wait=1 error=1)",
		"Problems: 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("adc status lacks %q:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "kubernetes.io/gce-pd") && !strings.Contains(line, " on ") {
			t.Errorf("gce-pd line %q does not show mode on", line)
		}
		if strings.HasPrefix(line, "kubernetes.io/aws-ebs") && !strings.Contains(line, " off ") {
			t.Errorf("aws-ebs line %q does not show mode off", line)
		}
	}
	t.Logf("adc status:\n%s", text)
}
