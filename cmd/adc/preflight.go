package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/preflight"
)

func init() { subcommands = append(subcommands, newPreflightCommand) }

// preflightOptions are the flags of `adc preflight`.
type preflightOptions struct {
	kubeconfig string
	output     string
	plugins    []string
	to         string
	migration  *adc.FlagOptions
}

// errBlocked is returned when a finding blocks the step, so the command exits 1 after
// printing the findings.
var errBlocked = errors.New("the step is not safe (the findings that block are listed above)")

func newPreflightCommand() *cobra.Command {
	o := &preflightOptions{migration: adc.NewFlagOptions(), output: "text"}
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Check what would block or change when in-tree plugins move a CSI migration step (read-only)",
		Long: `preflight reads the cluster once (what adc status reads, plus StorageClasses) and lists
everything that would block or change if the plugins given by --plugin (all seven by default)
moved to the mode --to (by default each plugin's next step: off to on, on to complete), per
node and per volume: CSI drivers not registered on nodes that would use them, missing
CSIDriver objects, lifecycle modes, StorageClass parameters csi-translation-lib rejects or
drops, PersistentVolumes and inline volumes that do not translate or lose placement, attach
limits, kubelet versions that cannot follow, nodes not migrated (complete) or migrated (off),
attached volumes that would change path and the nodes to drain first when going back.
Pass the controller's --migration, --node-migration-source and --driver-info-source: the step
starts from them. It writes nothing.

Exit code: 0 when nothing blocks (warnings allowed), 1 when a finding blocks, 2 when the
preflight could not run (bad input, an API server that does not answer).`,
		Example: `  adc preflight --plugin kubernetes.io/gce-pd --to complete
  adc preflight --plugin gce-pd --to off -o json
  adc preflight --migration kubernetes.io/portworx-volume=off --plugin portworx-volume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitCouldNotRun, err) })
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster service account")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: text or json (the schema of /api/v1/preflight)")
	f.StringSliceVar(&o.plugins, "plugin", nil, "in-tree plugin that moves (repeatable, or comma-separated; kubernetes.io/gce-pd or gce-pd); all seven when not given")
	f.StringVar(&o.to, "to", "", "mode the plugins move to: on, complete or off; empty means each plugin's next step (off to on, on to complete)")
	o.migration.AddMigrationFlags(f, "", "")
	return cmd
}

func (o *preflightOptions) run(ctx context.Context, out io.Writer) error {
	opts, render, err := o.options()
	if err != nil {
		return withExitCode(exitCouldNotRun, err)
	}
	clients, err := readClients(o.kubeconfig, "adc-preflight")
	if err != nil {
		return withExitCode(exitCouldNotRun, err)
	}
	cl, err := preflight.List(ctx, clients, opts.Config)
	if err != nil {
		return withExitCode(exitCouldNotRun, err)
	}
	report, err := preflight.Run(opts, cl, time.Now())
	if err != nil {
		return withExitCode(exitCouldNotRun, err)
	}
	if err := render(out, report); err != nil {
		return withExitCode(exitCouldNotRun, err)
	}
	if !report.OK {
		return withExitCode(exitBlocked, errBlocked)
	}
	return nil
}

// options parses the flags into preflight options and a renderer, with errors naming the flag.
func (o *preflightOptions) options() (preflight.Options, func(io.Writer, preflight.Report) error, error) {
	var render func(io.Writer, preflight.Report) error
	switch o.output {
	case "text", "":
		render = preflight.RenderText
	case "json":
		render = preflight.RenderJSON
	default:
		return preflight.Options{}, nil, fmt.Errorf("--output %q is not supported; use text or json", o.output)
	}
	to, err := preflight.ParseStep(o.to)
	if err != nil {
		return preflight.Options{}, nil, fmt.Errorf("--to: %w", err)
	}
	var plugins []string
	for _, p := range o.plugins {
		name, err := preflight.ParsePlugin(p)
		if err != nil {
			return preflight.Options{}, nil, fmt.Errorf("--plugin: %w", err)
		}
		plugins = append(plugins, name)
	}
	cfg := o.migration.Config()
	return preflight.Options{Config: cfg, Plugins: plugins, To: to}, render, nil
}
