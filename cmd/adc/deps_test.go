package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildTags are the tags `make build`, the Dockerfile and the tests' builds (framework
// BuildCommand) give the controller's binary. grpcnotrace keeps gRPC, should a dependency
// reach it again, from linking golang.org/x/net/trace, whose init serves /debug/requests with
// html/template on Go's default mux: k8s.io/apiserver's webhook clients (TokenReview,
// SubjectAccessReview) reached gRPC through the egress selector until pkg/server stopped
// linking them, and an executed template makes the linker keep every exported method of
// every type (96 MB instead of 62 MB).
const buildTags = "grpcnotrace"

// The controller's binary must not link envtest, nor k8s.io/apiserver's generic server, nor
// execute a text or html template.
// text/template's executor looks methods up by name at run time, so linking an executed
// template makes the linker keep every exported method of every type: with the dashboard's
// templates and the demo's envtest the binary was 79 MB and mapped 42 MB of its own pages at
// start, 46 MB and 26 MB without (docs/performance.md, "Memory"). Importing a template package
// costs nothing (cobra imports text/template, k8s.io/apiserver's routes import html/template,
// neither executes one in adc), so the binary, built as `make build` builds it, is checked
// for the executor itself.
func TestBinaryLinksNoTemplateEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", buildTags, "-deps", "github.com/migration-aware/adc/cmd/adc").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := map[string]string{
		"sigs.k8s.io/controller-runtime/pkg/envtest": "keep test control planes in cmd/adc-demo and the tests",
		"golang.org/x/net/trace":                     "build with -tags " + buildTags,
		// k8s.io/apiserver's generic server, its options and its webhook clients cost every
		// process about 8 MiB (docs/performance.md, "Secure serving without the generic
		// server"); pkg/server declares kube-controller-manager's flags itself.
		"k8s.io/apiserver/pkg/server":                             "serve with pkg/server's own secure port",
		"k8s.io/apiserver/pkg/server/options":                     "declare the serving flags in pkg/server",
		"k8s.io/apiserver/plugin/pkg/authenticator/token/webhook": "review tokens with pkg/server's TokenReview client",
		"k8s.io/apiserver/plugin/pkg/authorizer/webhook":          "review access with pkg/server's SubjectAccessReview client",
		"google.golang.org/grpc":                                  "nothing adc serves needs gRPC; find what reaches it with go list -deps",
	}
	for _, pkg := range strings.Fields(string(out)) {
		if why, ok := forbidden[pkg]; ok {
			t.Errorf("cmd/adc links %s; %s", pkg, why)
		}
	}

	bin := filepath.Join(t.TempDir(), "adc")
	build := exec.Command("go", "build", "-trimpath", "-tags", buildTags, "-o", bin, "github.com/migration-aware/adc/cmd/adc")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	syms, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, syms)
	}
	for _, executor := range []string{"text/template.(*state).evalCall", "text/template.(*state).evalField"} {
		if strings.Contains(string(syms), executor) {
			t.Errorf("cmd/adc's binary links the template executor (%s); render HTML with pkg/dashboard's htmlWriter, and find what executes a template with `go tool nm`", executor)
		}
	}
	if info, err := os.Stat(bin); err == nil {
		t.Logf("binary: %.1f MB", float64(info.Size())/1e6)
	}
}
