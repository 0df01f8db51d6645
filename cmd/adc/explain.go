package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/explain"
)

func init() { subcommands = append(subcommands, newExplainCommand) }

// explainOptions are the flags of `adc explain`.
type explainOptions struct {
	kubeconfig        string
	output            string
	controller        string
	maxWaitForUnmount time.Duration
	migration         *adc.FlagOptions
}

func newExplainCommand() *cobra.Command {
	o := &explainOptions{migration: adc.NewFlagOptions(), output: "text", maxWaitForUnmount: explain.DefaultMaxWaitForUnmount}
	cmd := &cobra.Command{
		Use:   "explain (pod NAMESPACE/NAME | pv NAME)",
		Short: "Explain, volume by volume, why a pod's volumes are (not) attached (read-only)",
		Long: `explain shows, for each volume of a pod (or of the pods using a PersistentVolume), the whole
chain as adc sees it now: the decision and the objects that decided it (claim, volume,
--migration, the node's migration state, the driver's registration on the node, the
CSIDriver's attachRequired); which node holds a ReadWriteOnce volume and since when; the
VolumeAttachment and the external-attacher's attach error; whether node status lists the
volume and the kubelet reports it in use; for a detach, what blocks it and when a forced
detach would happen; and what happens next. It reads the cluster (the pods and claims of the
target's namespace, and nodes, CSINodes, CSIDrivers and VolumeAttachments) and writes nothing.

--controller URL adds a running controller's memory (held pairs with their retries and next
retry, multi-attach and version-skew problems, recent attach and detach operations) from its
HTTP listener (its rollout report, the dashboard's JSON API). Pass the controller's --migration, --node-migration-source,
--driver-info-source and --max-wait-for-unmount.

Exit code: 0 when explained, 2 when it could not explain (bad input, a pod or volume that
does not exist, an API server or controller that does not answer).`,
		Example: `  adc explain pod db/pg-0
  adc explain pv pvc-1234 -o json
  kubectl -n adc-system port-forward deploy/adc 8080 &
  adc explain pod db/pg-0 --controller http://localhost:8080`,
		Args: func(cmd *cobra.Command, args []string) error {
			return withExitCode(exitCouldNotRun, cobra.ExactArgs(2)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return withExitCode(exitCouldNotRun, o.run(ctx, cmd.OutOrStdout(), args[0], args[1]))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExitCode(exitCouldNotRun, err) })
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig file; empty means the in-cluster service account")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: text or json (the schema of /api/v1/explain)")
	f.StringVar(&o.controller, "controller", "", "address of a running controller's HTTP listener (its --http-addr), e.g. http://localhost:8080, for its memory: holds, retries, problems, recent operations")
	f.DurationVar(&o.maxWaitForUnmount, "max-wait-for-unmount", o.maxWaitForUnmount, "the controller's --max-wait-for-unmount, for when a forced detach would happen")
	o.migration.AddMigrationFlags(f, "", "")
	return cmd
}

func (o *explainOptions) run(ctx context.Context, out io.Writer, kind, ref string) error {
	var render func(io.Writer, explain.Report) error
	switch o.output {
	case "text", "":
		render = explain.RenderText
	case "json":
		render = explain.RenderJSON
	default:
		return fmt.Errorf("--output %q is not supported; use text or json", o.output)
	}
	if plugin != nil && kind == explain.KindPod {
		ref = plugin.podRef(o.kubeconfig, ref)
	}
	target, err := explain.ParseTarget(kind, ref)
	if err != nil {
		return err
	}
	cfg := o.migration.Config()
	opts := explain.Options{Config: cfg, MaxWaitForUnmount: o.maxWaitForUnmount, ControllerAddress: o.controller}
	if o.controller != "" {
		// Asked first: a wrong address should fail before the cluster is read.
		if opts.Controller, err = explain.FetchController(ctx, &http.Client{Timeout: 10 * time.Second}, o.controller, dashboard.APIPath); err != nil {
			return err
		}
	}
	clients, err := readClients(o.kubeconfig, "adc-explain")
	if err != nil {
		return err
	}
	cl, err := explain.Read(ctx, clients, cfg, target)
	if err != nil {
		return err
	}
	return render(out, explain.Build(opts, target, cl, time.Now()))
}
