// Command adc is the migration-aware attach/detach controller and its operator tools. Named
// kubectl-adc (a symlink will do) it is also kubectl's plugin: `kubectl adc explain pod
// NAME -n NAMESPACE`, `kubectl adc preflight --context prod`.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newCommand(os.Args[0]).Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}

// newCommand is adc's command line as the name it was started under asks: adc itself, or
// kubectl's plugin (kubectl-adc).
func newCommand(argv0 string) *cobra.Command {
	root := newRootCommand()
	if isKubectlPlugin(argv0) {
		asKubectlPlugin(root)
	}
	return root
}
