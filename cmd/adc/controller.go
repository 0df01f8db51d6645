package main

import (
	"context"
	"flag"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

func init() { subcommands = append(subcommands, newControllerCommand) }

// controllerFlags are the flags of `adc controller`.
type controllerFlags struct {
	kubeconfig        string
	workers           int
	qps               float32
	burst             int
	migration         string
	nodeSource        string
	maxWaitForUnmount time.Duration
	resync            time.Duration
}

func newControllerCommand() *cobra.Command {
	f := &controllerFlags{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the migration-aware attach/detach controller until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; in-cluster configuration when empty.")
	fs.IntVar(&f.workers, "workers", 10, "Number of nodes reconciled in parallel (and of node status writers).")
	fs.Float32Var(&f.qps, "kube-api-qps", 20, "Queries per second to the API server.")
	fs.IntVar(&f.burst, "kube-api-burst", 30, "Burst of queries to the API server.")
	fs.StringVar(&f.migration, "migration", "", "Per in-tree plugin migration mode, e.g. kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off; modes off|on|complete; unlisted plugins are on.")
	fs.StringVar(&f.nodeSource, "node-migration-source", string(migration.NodeSourceCSINode), "Where node migration state is read: csinode, csinodeinfo (seed API) or auto.")
	fs.DurationVar(&f.maxWaitForUnmount, "max-wait-for-unmount", 6*time.Minute, "How long a node may be not Ready before its in-use volumes are force-detached.")
	fs.DurationVar(&f.resync, "resync-period", 0, "Informer resync period; 0 disables resync (events and backoff drive every retry).")
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	fs.AddGoFlagSet(gfs)
	return cmd
}

// controllerOptions turns flags into controller options, with errors that name the flag.
func (f *controllerFlags) controllerOptions() (adc.Options, error) {
	opts := adc.DefaultOptions()
	modes, err := migration.ParseModes(f.migration)
	if err != nil {
		return opts, fmt.Errorf("--migration: %w", err)
	}
	opts.Migration = opts.Migration.WithModes(modes)
	src, err := migration.ParseNodeSource(f.nodeSource)
	if err != nil {
		return opts, fmt.Errorf("--node-migration-source: %w", err)
	}
	opts.Migration.NodeSource = src
	if f.maxWaitForUnmount <= 0 {
		return opts, fmt.Errorf("--max-wait-for-unmount must be positive, got %s", f.maxWaitForUnmount)
	}
	opts.MaxWaitForUnmount = f.maxWaitForUnmount
	if f.workers < 1 {
		return opts, fmt.Errorf("--workers must be at least 1, got %d", f.workers)
	}
	if f.qps <= 0 || f.burst <= 0 {
		return opts, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", f.qps, f.burst)
	}
	return opts, opts.Validate()
}

func runController(parent context.Context, f *controllerFlags) error {
	opts, err := f.controllerOptions()
	if err != nil {
		return err
	}
	cfg, err := restConfig(f.kubeconfig, f.qps, f.burst)
	if err != nil {
		return err
	}
	cfg.UserAgent = "adc-controller"
	// One budget of --kube-api-qps/--kube-api-burst, in which node status writes go first.
	cfg, statusCfg := volumeattach.PrioritizedConfigs(cfg, f.qps, f.burst)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	statusClient, err := kubernetes.NewForConfig(statusCfg)
	if err != nil {
		return fmt.Errorf("building the node status client: %w", err)
	}
	opts.NodeStatus = &volumeattach.ClientStatusWriter{Client: statusClient}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the dynamic client: %w", err)
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("adc"))

	factory := informers.NewSharedInformerFactory(client, f.resync)
	ctrl, err := adc.New(client, dyn, factory, opts)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	ctrl.Run(ctx, f.workers)
	return nil
}
