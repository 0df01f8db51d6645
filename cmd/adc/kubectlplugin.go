package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// pluginName is the name kubectl looks for on PATH to run `kubectl adc ...`: installing the
// binary (or a symlink to it) under that name makes it a kubectl plugin, as operators expect
// of storage tools (kubectl-df-pv, kubectl-view-allocations), with no second binary to build.
const pluginName = "kubectl-adc"

// isKubectlPlugin says whether the process was started as kubectl's plugin: kubectl runs the
// plugin binary with argv[0] its path, so the base name tells (".exe" aside on Windows).
func isKubectlPlugin(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == pluginName
}

// kubectlFlags are the connection flags kubectl users type out of habit, which the plugin
// honors: --context and --namespace/-n, with --kubeconfig and $KUBECONFIG resolved as kubectl
// resolves them (clientcmd's loading rules: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account). nil when adc runs as itself, where an
// empty --kubeconfig means the in-cluster service account, as for every controller.
type kubectlFlags struct {
	context   string
	namespace string
}

// plugin is set by asKubectlPlugin; restConfig and explain read it.
var plugin *kubectlFlags

// asKubectlPlugin turns root into `kubectl adc`: help and examples name it so, and the root
// gets kubectl's --context and --namespace/-n.
func asKubectlPlugin(root *cobra.Command) {
	plugin = &kubectlFlags{}
	// cobra's way of naming a kubectl plugin: usage lines read "kubectl adc explain".
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl adc"}
	root.PersistentFlags().StringVar(&plugin.context, "context", "", "the kubeconfig context to use, as for kubectl")
	root.PersistentFlags().StringVarP(&plugin.namespace, "namespace", "n", "", "the namespace of a pod named without one (explain pod NAME), as for kubectl; default: the context's")
	for _, c := range root.Commands() {
		if f := c.Flags().Lookup("kubeconfig"); f != nil {
			f.Usage = "path to a kubeconfig file; empty means $KUBECONFIG, else ~/.kube/config, as for kubectl"
		}
		c.Example = strings.ReplaceAll(c.Example, "  adc ", "  kubectl adc ")
	}
}

// clientConfig is kubectl's view of the kubeconfig: path (--kubeconfig) if given, else
// $KUBECONFIG or ~/.kube/config, with the context overridden by --context.
func (k *kubectlFlags) clientConfig(path string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// podRef completes a pod reference typed as for kubectl: NAME alone takes the namespace of
// -n, else the kubeconfig context's, else "default"; NAMESPACE/NAME is kept as it is.
func (k *kubectlFlags) podRef(kubeconfig, ref string) string {
	if strings.Contains(ref, "/") {
		return ref
	}
	ns := k.namespace
	if ns == "" {
		if contextNS, _, err := k.clientConfig(kubeconfig).Namespace(); err == nil && contextNS != "" {
			ns = contextNS
		}
	}
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + ref
}
