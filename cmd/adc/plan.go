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
)

func init() { subcommands = append(subcommands, newPlanCommand) }

// planOptions are the flags of `adc plan`.
type planOptions struct {
	kubeconfig string
	output     string
	migration  string
	nodeSource string
}

func newPlanCommand() *cobra.Command {
	o := &planOptions{output: "table", nodeSource: string(migration.NodeSourceCSINode)}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show how every volume of every scheduled pod would be attached (read-only dry run)",
		Long: `plan lists pods, PersistentVolumeClaims, PersistentVolumes, Nodes, CSINodes, CSIDrivers and
(for the csinodeinfo and auto node sources) CSINodeInfos once, and prints the decision adc makes
for every (pod volume, node) pair of each pod that is scheduled and not terminated: the
mechanism (csi, csi-no-attach, in-tree, not-attachable, wait, error) and why. It writes nothing.`,
		Example: `  adc plan --kubeconfig ~/.kube/config
  adc plan -o json --migration kubernetes.io/gce-pd=complete,kubernetes.io/aws-ebs=off
  adc plan --node-migration-source auto`,
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
	f.StringVar(&o.migration, "migration", "", "per-plugin migration modes laid over the default (all "+migration.ModeOn.String()+
		"), e.g. kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off; modes: off, on, complete; plugins: "+strings.Join(migration.MigratablePlugins, ", "))
	f.StringVar(&o.nodeSource, "node-migration-source", o.nodeSource, "where node migration state is read: csinode, csinodeinfo or auto")
	return cmd
}

func (o *planOptions) run(ctx context.Context, cmd *cobra.Command) error {
	render, err := renderer(o.output)
	if err != nil {
		return err
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

	// restConfig (kubeconfig.go) falls back to the in-cluster configuration for an empty
	// path; zero QPS and burst keep client-go's defaults, plenty for a handful of lists.
	restCfg, err := restConfig(o.kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	restCfg.UserAgent = "adc-plan"
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	report, err := plan.Build(ctx, plan.Clients{Kube: kube, Dynamic: dyn}, cfg)
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
