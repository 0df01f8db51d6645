package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// statusArgs are `adc status` against the test control plane with the controller's flags.
func statusArgs(t *testing.T, extra ...string) []string {
	return append([]string{"status", "--kubeconfig", framework.Get(t).KubeconfigPath,
		"--migration", ebsPlugin + "=off," + pxPlugin + "=complete"}, extra...)
}

// runStatus runs `adc status -o output` and fails the test unless it exits 0.
func runStatus(t *testing.T, output string) string {
	t.Helper()
	stdout, stderr, code := runADC(t, statusArgs(t, "-o", output)...)
	if code != 0 {
		t.Fatalf("adc status -o %s exited %d\n%s", output, code, stderr)
	}
	return stdout
}

// runADC runs the adc binary and returns its stdout, stderr and exit code.
func runADC(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(adcBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("running adc %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
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
	// Node counts and readiness agree; volumes by path differ only where the controller holds
	// the in-tree pair (it has no in-tree attacher), which the cluster source counts in-tree.
	for i := range fromController.Plugins {
		c, k := fromController.Plugins[i], fromCluster.Plugins[i]
		if c.Plugin == gcePlugin {
			if want := (rollout.VolumePaths{CSI: 4, InTree: 0, Held: 2, Total: 6}); c.VolumesByPath != want {
				t.Errorf("gce-pd volumes by path from the controller %+v, want %+v", c.VolumesByPath, want)
			}
			if want := (rollout.VolumePaths{CSI: 4, InTree: 1, Held: 1, Total: 6}); k.VolumesByPath != want {
				t.Errorf("gce-pd volumes by path from the cluster %+v, want %+v", k.VolumesByPath, want)
			}
		}
		c.VolumesByPath, k.VolumesByPath = rollout.VolumePaths{}, rollout.VolumePaths{}
		if !reflect.DeepEqual(k, c) {
			t.Errorf("plugin from the cluster:\n%+v\nfrom the controller:\n%+v", k, c)
		}
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
		"volumes csi=4 in-tree=1 held=1  not ready for complete: 2 nodes, 2 volumes",
		"skew: 3/4 nodes not migrated (2 not, 1 unknown)",
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

	nodes, stderr, code := runADC(t, statusArgs(t, "--nodes", "--plugin", gcePlugin)...)
	if code != 0 {
		t.Fatalf("adc status --nodes exited %d: %s", code, stderr)
	}
	for _, want := range []string{
		"4 of 4 shown (plugin " + gcePlugin + ")",
		rc.migrated + "  " + kubeletVersion + "  CSINode      migrated ",
		rc.notMigrated + "  " + oldKubeletVersion + "  CSINode      not-migrated ",
		rc.unknown + "  " + kubeletVersion + "  none         unknown ",
	} {
		if !strings.Contains(nodes, want) {
			t.Errorf("adc status --nodes lacks %q:\n%s", want, nodes)
		}
	}
	t.Logf("adc status --nodes --plugin %s:\n%s", gcePlugin, nodes)
	js, stderr, code := runADC(t, statusArgs(t, "--nodes", "--plugin", gcePlugin, "--state", "not-migrated", "-o", "json")...)
	var nr rollout.NodesReport
	if code != 0 || json.Unmarshal([]byte(js), &nr) != nil || len(nr.Nodes) != 1 || nr.Nodes[0].Name != rc.notMigrated {
		t.Errorf("adc status --nodes --state not-migrated -o json (exit %d, %s):\n%s", code, stderr, js)
	}
}

// testCheckComplete runs `adc status --check-complete` for gce-pd on the seeded cluster (two
// blockers: exit 1 and the list), then lets the two lagging nodes report gce-pd migrated and
// runs it again (safe: exit 0). It changes the cluster, so it runs last.
func testCheckComplete(t *testing.T, rc *rolloutCluster) {
	out, stderr, code := runADC(t, statusArgs(t, "--check-complete", gcePlugin)...)
	if code != 1 {
		t.Fatalf("--check-complete on the mid-rollout cluster exited %d, want 1\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		gcePlugin + " (mode on): not safe to switch to complete: 2 of 4 managed nodes have not reported it migrated and 2 volumes would change path",
		"\n  node " + rc.notMigrated + ": not-migrated (its kubelet still uses the in-tree plugin)\n",
		"\n  node " + rc.unknown + ": unknown (no CSINode or CSINodeInfo yet: it has not reported)\n",
		"\n  volume " + rc.ns + "/app-c data-0 (pv " + rc.ns + "-pd-c) on node " + rc.notMigrated + ": in-tree -> csi\n",
		"\n  volume " + rc.ns + "/app-d data-0 (pv " + rc.ns + "-pd-d) on node " + rc.unknown + ": wait -> csi\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--check-complete output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "not safe to switch to complete") {
		t.Errorf("stderr = %q, want the reason for the exit code", stderr)
	}
	t.Logf("adc status --check-complete %s (exit %d):\n%s", gcePlugin, code, out)

	// A plugin that is not migratable is a usage error, not a verdict.
	if _, stderr, code := runADC(t, statusArgs(t, "--check-complete", "kubernetes.io/nfs")...); code == 0 || !strings.Contains(stderr, "not an in-tree plugin CSI migration covers") {
		t.Errorf("--check-complete kubernetes.io/nfs exited %d: %s", code, stderr)
	}

	_, ctx := ktesting.NewTestContext(t)
	kubelet := simulator.Kubelet{Client: framework.Get(t).Client}
	for _, n := range []string{rc.notMigrated, rc.unknown} {
		if err := kubelet.ReportCSINode(ctx, n, gcePlugin, nodeDrivers...); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code = runADC(t, statusArgs(t, "--check-complete", gcePlugin)...)
	if code != 0 {
		t.Fatalf("--check-complete once every node reports gce-pd migrated exited %d, want 0\n%s%s", code, out, stderr)
	}
	if want := gcePlugin + " (mode on): safe to switch to complete: all 4 managed nodes report it migrated and all 6 of its volumes already go through CSI\n"; out != want {
		t.Errorf("--check-complete output = %q, want %q", out, want)
	}
	t.Logf("adc status --check-complete %s (exit %d):\n%s", gcePlugin, code, out)
}
