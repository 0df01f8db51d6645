package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The controller's binary must not link html/template or envtest. text/template's executor
// looks methods up by name at run time, so linking an executed template makes the linker keep
// every exported method of every type: with the dashboard's templates and the demo's envtest
// the binary was 79 MB and mapped 42 MB of its own pages at start, 46 MB and 26 MB without
// (docs/performance.md, "Memory"). cobra imports text/template without executing it, which
// costs nothing, so only the packages that execute templates are checked.
func TestBinaryLinksNoTemplateEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/migration-aware/adc/cmd/adc").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := map[string]string{
		"html/template": "render HTML with pkg/dashboard's htmlWriter",
		"sigs.k8s.io/controller-runtime/pkg/envtest": "keep test control planes in cmd/adc-demo and the tests",
	}
	for _, pkg := range strings.Fields(string(out)) {
		if why, ok := forbidden[pkg]; ok {
			t.Errorf("cmd/adc links %s; %s", pkg, why)
		}
	}
}
