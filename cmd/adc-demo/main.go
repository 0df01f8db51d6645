// Command adc-demo is the one-command tour of adc: a local control plane seeded in the middle
// of a CSI migration rollout, the controller converging on it, then the decision table.
//
// It is a program of its own, not a subcommand of adc: it links envtest (controller-runtime,
// the apiextensions client and html/template), and text/template's reflection makes the
// linker keep every exported method of every type in the binary. In the adc binary that would
// cost every controller replica ~17 MB of resident memory (docs/performance.md, "Memory").
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/internal/demo"
	"github.com/migration-aware/adc/internal/serving"
	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
)

func main() {
	if err := newDemoCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newDemoCommand() *cobra.Command {
	o := demo.Options{}
	var logFile string
	cmd := &cobra.Command{
		Use:   "adc-demo",
		Short: "Run adc on a local control plane seeded with a mid-rollout cluster (needs `make envtest-assets`)",
		Long: `adc-demo starts a local kube-apiserver and etcd (built by make envtest-assets), seeds a cluster in the
middle of a CSI migration rollout, runs the controller with a SIMULATED external-attacher, kubelet
registration and in-tree attacher, shows a progress bar while it converges, then prints the
decision table and a per-plugin rollout summary. It exits 0 once converged, non-zero if it does
not converge within --timeout. With --serve it keeps running with the dashboard up.

The same story on real kubelets, csi-attacher and a CSI driver is ` + "`make demo REAL=1`" + ` (test/e2e/demo,
a separate program so that this binary does not link the end-to-end harness).`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Serve {
				// Before the demo runs, not after: plain HTTP listens on loopback only.
				if err := server.CheckLoopback(o.HTTPAddr); err != nil {
					return err
				}
			}
			if err := logToFile(logFile); err != nil {
				return err
			}
			defer klog.Flush()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o.Out = cmd.OutOrStdout()
			o.Interactive = term.IsTerminal(int(os.Stdout.Fd()))
			m, err := metrics.Legacy()
			if err != nil {
				return fmt.Errorf("registering metrics: %w", err)
			}
			o.Observer = m
			o.Register = func(srv *server.Server, ctrl *adc.Controller) {
				serving.Rollout(srv, m, ctrl.Config(), func() rollout.ControllerView { return ctrl })
			}
			err = demo.Run(ctx, o)
			if errors.Is(err, demo.ErrNotConverged) {
				fmt.Fprintf(cmd.ErrOrStderr(), "controller log: %s\n", logFile)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "Give up (exit non-zero) if not converged by then.")
	f.DurationVar(&o.LateCSINode, "late-csinode-after", 3*time.Second, "When the late node's simulated kubelet registers its CSINode.")
	f.DurationVar(&o.AttachDelay, "attach-delay", 300*time.Millisecond, "How long a simulated attach takes.")
	f.BoolVar(&o.Serve, "serve", false, "Keep running with the HTTP listener (dashboard, /metrics) up after converging.")
	f.StringVar(&o.HTTPAddr, "http-addr", "127.0.0.1:8080", "Listener address for --serve: plain HTTP, so a loopback address only.")
	f.StringVar(&logFile, "log-file", filepath.Join(os.TempDir(), "adc-demo.log"), "Where the controller's log goes (the terminal shows progress).")
	return cmd
}

// logToFile sends klog output to path, so the terminal shows the demo's own output.
func logToFile(path string) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "log_file": path, "v": "2"} {
		if err := fs.Set(k, v); err != nil {
			return fmt.Errorf("configuring the demo log: %w", err)
		}
	}
	return nil
}
