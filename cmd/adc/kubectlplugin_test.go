package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://dev.example:6443"}
- name: prod
  cluster: {server: "https://prod.example:6443"}
users:
- name: me
  user: {token: t}
contexts:
- name: dev
  context: {cluster: dev, user: me}
- name: prod
  context: {cluster: prod, user: me, namespace: payments}
`

// TestKubectlPluginDispatch: started as kubectl-adc (argv[0], any directory, .exe on
// Windows) the binary is `kubectl adc`, with kubectl's --context and --namespace/-n; started
// under any other name it is adc, without them.
func TestKubectlPluginDispatch(t *testing.T) {
	t.Cleanup(func() { plugin = nil })
	for argv0, want := range map[string]bool{
		"/usr/local/bin/kubectl-adc": true, "kubectl-adc": true, "kubectl-adc.exe": true,
		"/usr/local/bin/adc": false, "adc": false, "kubectl-adc-dev": false, "/opt/kubectl-adc/adc": false,
	} {
		if got := isKubectlPlugin(argv0); got != want {
			t.Errorf("isKubectlPlugin(%q) = %v, want %v", argv0, got, want)
		}
	}

	plugin = nil
	root := newCommand("/usr/local/bin/adc")
	if root.DisplayName() != "adc" || root.PersistentFlags().Lookup("context") != nil || plugin != nil {
		t.Errorf("as adc: named %q, --context %v, plugin %v; want adc without kubectl's flags", root.DisplayName(), root.PersistentFlags().Lookup("context"), plugin)
	}

	root = newCommand("/usr/local/bin/kubectl-adc")
	if root.DisplayName() != "kubectl adc" || plugin == nil {
		t.Fatalf("as kubectl-adc: named %q, plugin %v; want kubectl adc", root.DisplayName(), plugin)
	}
	for _, sub := range []string{"explain", "preflight"} {
		cmd, _, err := root.Find([]string{sub})
		if err != nil {
			t.Fatalf("kubectl adc %s: %v", sub, err)
		}
		if strings.Contains("\n"+cmd.Example, "\n  adc ") {
			t.Errorf("kubectl adc %s's examples still say adc:\n%s", sub, cmd.Example)
		}
		if !strings.HasPrefix(cmd.UseLine(), "kubectl adc "+sub) {
			t.Errorf("usage line %q, want kubectl adc %s ...", cmd.UseLine(), sub)
		}
		if u := cmd.Flags().Lookup("kubeconfig").Usage; !strings.Contains(u, "KUBECONFIG") {
			t.Errorf("kubectl adc %s --kubeconfig says %q, want kubectl's resolution", sub, u)
		}
	}
	cmd, args, err := root.Find([]string{"explain", "pod", "web-0", "-n", "team-a", "--context", "prod", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if plugin.namespace != "team-a" || plugin.context != "prod" || cmd.Flags().Lookup("output").Value.String() != "json" {
		t.Errorf("parsed -n %q --context %q -o %q; want team-a, prod, json", plugin.namespace, plugin.context, cmd.Flags().Lookup("output").Value)
	}
	if rest := cmd.Flags().Args(); strings.Join(rest, " ") != "pod web-0" {
		t.Errorf("arguments %q, want pod web-0", rest)
	}
}

// TestKubectlPluginKubeconfig: as kubectl adc, the cluster is the one kubectl would talk to:
// $KUBECONFIG's current context, or --context's, or --kubeconfig's file; a pod named alone
// takes -n's namespace, else the context's, else default.
func TestKubectlPluginKubeconfig(t *testing.T) {
	t.Cleanup(func() { plugin = nil })
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte(strings.ReplaceAll(twoContexts, "current-context: dev", "current-context: prod")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)

	for _, tc := range []struct {
		name, context, namespace, kubeconfig string
		wantHost, wantRef                    string
	}{
		{name: "KUBECONFIG's current context", wantHost: "https://dev.example:6443", wantRef: "default/web-0"},
		{name: "--context", context: "prod", wantHost: "https://prod.example:6443", wantRef: "payments/web-0"},
		{name: "-n wins over the context's namespace", context: "prod", namespace: "team-a", wantHost: "https://prod.example:6443", wantRef: "team-a/web-0"},
		{name: "--kubeconfig wins over KUBECONFIG", kubeconfig: other, wantHost: "https://prod.example:6443", wantRef: "payments/web-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plugin = &kubectlFlags{context: tc.context, namespace: tc.namespace}
			cfg, err := restConfig(tc.kubeconfig, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost {
				t.Errorf("host %q, want %q", cfg.Host, tc.wantHost)
			}
			if got := plugin.podRef(tc.kubeconfig, "web-0"); got != tc.wantRef {
				t.Errorf("pod web-0 is %q, want %q", got, tc.wantRef)
			}
			if got := plugin.podRef(tc.kubeconfig, "db/pg-0"); got != "db/pg-0" {
				t.Errorf("pod db/pg-0 is %q, want it kept", got)
			}
		})
	}
	plugin = &kubectlFlags{context: "staging"}
	if _, err := restConfig("", 0, 0); err == nil || !strings.Contains(err.Error(), "staging") {
		t.Errorf("an unknown --context: %v, want an error naming it", err)
	}
}
