package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

func init() { subcommands = append(subcommands, newStatusCommand) }

// statusOptions are the flags of `adc status`.
type statusOptions struct {
	kubeconfig string
	output     string
	migration  *adc.FlagOptions
	// checkComplete is the plugin of --check-complete, or empty.
	checkComplete string
	// nodes, plugin and state are --nodes and its filters.
	nodes         bool
	plugin, state string
}

// errNotReady is returned by --check-complete when switching the plugin is not safe, so the
// command exits non-zero after printing the blockers.
var errNotReady = errors.New("not safe to switch to complete (blockers listed above)")

func newStatusCommand() *cobra.Command {
	o := &statusOptions{migration: adc.NewFlagOptions(), output: "text"}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the CSI migration rollout computed from the cluster (read-only, no controller needed)",
		Long: `status lists nodes, CSINodes, (for the csinodeinfo and auto node sources) CSINodeInfos, pods,
claims, volumes, CSIDrivers (for the seed and auto driver-info sources also the seed-API
ones) and VolumeAttachments once and prints the rollout summary the
dashboard shows: per in-tree plugin how many managed nodes are migrated, not migrated or have not
reported yet, the controller's mode, volumes by mechanism, held pairs and problems (version skew,
multi-attach). Pass the same --migration, --node-migration-source and --driver-info-source as
the controller. It writes nothing.

--check-complete PLUGIN prints only whether switching PLUGIN to complete is safe now and exits 0
only then: every managed node reports it migrated and no volume would change path. Otherwise
it lists the blockers (nodes, volumes) and exits 1, so it can gate an automated rollout.

--nodes prints the managed nodes instead (the dashboard's /nodes): kubelet version, whether
each reports through its CSINode or CSINodeInfo, its migrated plugins and its volumes by
mechanism; --plugin P shows each node's state for P and --state narrows to one state.`,
		Example: `  adc status --kubeconfig ~/.kube/config
  adc status -o json --migration kubernetes.io/aws-ebs=off | jq '.plugins[] | select(.nodesUnknown > 0)'
  adc status --check-complete kubernetes.io/gce-pd  # exit 0 only when switching gce-pd to complete is safe
  adc status --nodes --plugin kubernetes.io/gce-pd --state not-migrated`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster service account")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: text or json (the schema of /dashboard/api/v1/rollout)")
	f.StringVar(&o.checkComplete, "check-complete", "", "in-tree plugin to check: exit 0 only when switching it to complete is safe now, else list the blockers and exit 1")
	f.BoolVar(&o.nodes, "nodes", false, "print the managed nodes instead of the summary: kubelet version, the object each reports through, migrated plugins and volumes by mechanism")
	f.StringVar(&o.plugin, "plugin", "", "with --nodes: show each node's state for this in-tree plugin")
	f.StringVar(&o.state, "state", "", "with --nodes --plugin: only nodes in this state for the plugin: migrated, not-migrated or unknown (not reported)")
	o.migration.AddMigrationFlags(f, "", "")
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
	filter := rollout.NodeFilter{Plugin: o.plugin, State: o.state}
	switch {
	case !o.nodes && (o.plugin != "" || o.state != ""):
		return fmt.Errorf("--plugin and --state filter --nodes; add --nodes")
	case o.nodes && o.checkComplete != "":
		return fmt.Errorf("--nodes and --check-complete are separate views; pass one")
	}
	if err := filter.Validate(); err != nil {
		return fmt.Errorf("--plugin/--state: %w", err)
	}
	cfg := o.migration.Config()
	clients, err := readClients(o.kubeconfig, "adc-status")
	if err != nil {
		return err
	}
	report, err := rollout.FromCluster(ctx, clients, cfg)
	if err != nil {
		return err
	}
	if o.checkComplete != "" {
		return checkComplete(out, report, o.checkComplete, o.output)
	}
	if o.nodes {
		if o.output == "json" {
			return rollout.RenderNodesJSON(out, report.NodesView(filter))
		}
		return rollout.RenderNodesText(out, report.NodesView(filter))
	}
	return render(out, report)
}

// checkComplete prints the plugin's readiness for complete (text verdict, or its
// PluginRollout as JSON) and returns errNotReady unless it is safe.
func checkComplete(out io.Writer, report rollout.Report, plugin, output string) error {
	p, ok := report.Plugin(plugin)
	if !ok {
		return fmt.Errorf("--check-complete %q: not an in-tree plugin CSI migration covers; use one of %s", plugin, strings.Join(migration.MigratablePlugins, ", "))
	}
	var err error
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err = enc.Encode(p); err != nil {
			err = fmt.Errorf("writing the readiness of %s as JSON: %w", plugin, err)
		}
	} else {
		err = rollout.RenderCheckComplete(out, p)
	}
	if err != nil {
		return err
	}
	if !p.Readiness.Ready {
		return fmt.Errorf("%s: %w", plugin, errNotReady)
	}
	return nil
}
