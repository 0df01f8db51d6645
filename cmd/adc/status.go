package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/rollout"
)

func init() { subcommands = append(subcommands, newStatusCommand) }

// statusOptions are the flags of `adc status`.
type statusOptions struct {
	kubeconfig string
	output     string
	migration  string
	nodeSource string
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{output: "text", nodeSource: string(migration.NodeSourceCSINode)}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the CSI migration rollout computed from the cluster (read-only, no controller needed)",
		Long: `status lists nodes, CSINodes, (for the csinodeinfo and auto node sources) CSINodeInfos, pods,
claims, volumes, CSIDrivers and VolumeAttachments once and prints the rollout summary the
dashboard shows: per in-tree plugin how many managed nodes are migrated, not migrated or have not
reported yet, the controller's mode, volumes by mechanism, held pairs and problems (version skew,
multi-attach). Pass the same --migration and --node-migration-source as the controller. It
writes nothing.`,
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
	f.StringVar(&o.migration, "migration", "", "per-plugin migration modes laid over the default (all "+migration.ModeOn.String()+
		"), as given to the controller, e.g. kubernetes.io/gce-pd=off; plugins: "+strings.Join(migration.MigratablePlugins, ", "))
	f.StringVar(&o.nodeSource, "node-migration-source", o.nodeSource, "where node migration state is read: csinode, csinodeinfo or auto")
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
	modes, err := migration.ParseModes(o.migration)
	if err != nil {
		return fmt.Errorf("--migration: %w", err)
	}
	source, err := migration.ParseNodeSource(o.nodeSource)
	if err != nil {
		return fmt.Errorf("--node-migration-source: %w", err)
	}
	cfg := migration.DefaultConfig().WithModes(modes)
	cfg.NodeSource = source

	restCfg, err := restConfig(o.kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	restCfg.UserAgent = "adc-status"
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	report, err := rollout.FromCluster(ctx, plan.Clients{Kube: kube, Dynamic: dyn}, cfg)
	if err != nil {
		return err
	}
	return render(out, report)
}
