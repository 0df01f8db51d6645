package main

import (
	"github.com/spf13/cobra"
)

// subcommands is filled by the init functions of the files that define each subcommand, so
// each subcommand lives in its own file.
var subcommands []func() *cobra.Command

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "adc",
		Short:         "Migration-aware attach/detach controller for Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	for _, sub := range subcommands {
		root.AddCommand(sub())
	}
	return root
}
