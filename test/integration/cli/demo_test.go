package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/migration-aware/adc/test/integration/framework"
)

// adc-demo converges on its own control plane and prints the decision table and the
// rollout summary with every mechanism the scenario seeds.
func TestDemoConverges(t *testing.T) {
	demoBinary, cleanup, err := framework.BuildCommand("adc-demo")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	out, err := exec.Command(demoBinary, "--timeout", "90s", "--log-file", t.TempDir()+"/demo.log").CombinedOutput()
	if err != nil {
		t.Fatalf("adc-demo: %v\n%s", err, out)
	}
	text := string(out)
	// Compare with runs of spaces folded: the table's column widths are tabwriter's business.
	folded := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{
		"converging [##############################] 13/13",
		"converged:",
		"SIMULATED external-attacher",
		"mechanisms: csi=10 csi-no-attach=1 in-tree=1 not-attachable=1 wait=0 error=0",
		"multi-attach",
		"kubernetes.io/gce-pd on [#######...] 3/4 1 0",
		"kubernetes.io/portworx-volume complete nodes not consulted",
	} {
		if !strings.Contains(folded, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	// The late node's volume must end attached through CSI, not guessed in-tree.
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "new-pool-1") && !(strings.Contains(line, " csi ") && strings.Contains(line, "attached")) {
			t.Errorf("late node row: %q, want csi attached", line)
		}
	}
}
