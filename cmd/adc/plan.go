package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/plan"
)

func init() { subcommands = append(subcommands, newPlanCommand) }

// planOptions are the flags of `adc plan`.
type planOptions struct {
	kubeconfig string
	output     string
	migration  *adc.FlagOptions
}

func newPlanCommand() *cobra.Command {
	o := &planOptions{migration: adc.NewFlagOptions(), output: "table"}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show how every volume of every scheduled pod would be attached (read-only dry run)",
		Long: `plan lists pods, PersistentVolumeClaims, PersistentVolumes, Nodes, CSINodes, CSIDrivers,
(for the csinodeinfo and auto node sources) CSINodeInfos and (for the seed and auto driver-info
sources) seed-API CSIDrivers once, and prints the decision adc makes for every (pod volume,
node) pair of each pod that is scheduled and not terminated: the mechanism (csi,
csi-no-attach, in-tree, not-attachable, wait, error) and why, naming the CSIDriver object
(kind, API version, name) that decided attachRequired. It writes nothing.`,
		Example: `  adc plan --kubeconfig ~/.kube/config
  adc plan -o json --migration kubernetes.io/gce-pd=complete,kubernetes.io/aws-ebs=off
  adc plan --node-migration-source auto
  adc plan --driver-info-source seed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster service account")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: table or json")
	o.migration.AddMigrationFlags(f, "", "")
	return cmd
}

func (o *planOptions) run(ctx context.Context, cmd *cobra.Command) error {
	render, err := renderer(o.output)
	if err != nil {
		return err
	}
	cfg := o.migration.Config()
	clients, err := readClients(o.kubeconfig, "adc-plan")
	if err != nil {
		return err
	}
	report, err := plan.Build(ctx, clients, cfg)
	if err != nil {
		return err
	}
	return render(cmd.OutOrStdout(), report)
}

// renderer maps an --output value to its renderer.
func renderer(output string) (func(io.Writer, plan.Report) error, error) {
	switch output {
	case "table", "":
		return plan.RenderTable, nil
	case "json":
		return plan.RenderJSON, nil
	}
	return nil, fmt.Errorf("--output %q is not supported; use table or json", output)
}
