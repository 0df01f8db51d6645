package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/migration-aware/adc/pkg/rollout"
)

func init() { subcommands = append(subcommands, newStatusCommand) }

// statusOptions are the flags of `adc status`.
type statusOptions struct {
	kubeconfig string
	output     string
	migration  migrationFlags
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{output: "text"}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the CSI migration rollout computed from the cluster (read-only, no controller needed)",
		Long: `status lists nodes, CSINodes, (for the csinodeinfo and auto node sources) CSINodeInfos, pods,
claims, volumes, CSIDrivers (for the seed and auto driver-info sources also the seed-API
ones) and VolumeAttachments once and prints the rollout summary the
dashboard shows: per in-tree plugin how many managed nodes are migrated, not migrated or have not
reported yet, the controller's mode, volumes by mechanism, held pairs and problems (version skew,
multi-attach). Pass the same --migration, --node-migration-source and --driver-info-source as
the controller. It writes nothing.`,
		Example: `  adc status --kubeconfig ~/.kube/config
  adc status -o json --migration kubernetes.io/aws-ebs=off | jq '.plugins[] | select(.nodesUnknown > 0)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster service account")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: text or json (the schema of /api/v1/rollout)")
	o.migration.add(f)
	return cmd
}

func (o *statusOptions) run(ctx context.Context, out io.Writer) error {
	var render func(io.Writer, rollout.Report) error
	switch o.output {
	case "text", "":
		render = rollout.RenderText
	case "json":
		render = rollout.RenderJSON
	default:
		return fmt.Errorf("--output %q is not supported; use text or json", o.output)
	}
	cfg, err := o.migration.config()
	if err != nil {
		return err
	}
	clients, err := readClients(o.kubeconfig, "adc-status")
	if err != nil {
		return err
	}
	report, err := rollout.FromCluster(ctx, clients, cfg)
	if err != nil {
		return err
	}
	return render(out, report)
}
