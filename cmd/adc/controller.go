package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/internal/serving"
	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

func init() { subcommands = append(subcommands, newControllerCommand) }

// controllerFlags are the flags of `adc controller`.
type controllerFlags struct {
	kubeconfig string
	// shared are the flags kube-controller-manager also has (with an adc- prefix).
	shared             *adc.FlagOptions
	qps                float32
	burst              int
	nodeStatusMaxDelay time.Duration
	createsInFlight    int
	resync             time.Duration
	serving            *server.Options
	profiling          profilingFlags

	leaderElect   bool
	leaseNS       string
	leaseName     string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration

	logging *logsapi.LoggingConfiguration
}

func newControllerCommand() *cobra.Command {
	f := &controllerFlags{logging: logsapi.NewLoggingConfiguration(), serving: server.NewOptions(), shared: adc.NewFlagOptions()}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the migration-aware attach/detach controller until SIGINT or SIGTERM",
		Long: `controller attaches and detaches the volumes of scheduled pods, deciding per volume and node
between the in-tree plugin and the CSI driver. With --leader-elect (the default) only one replica
acts at a time; losing the lease stops it with a non-zero exit so its Pod restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapi.ValidateAndApply(f.logging, loggingFeatureGate()); err != nil {
				return fmt.Errorf("logging flags: %w", err)
			}
			return runController(cmd.Context(), f)
		},
	}
	var fss cliflag.NamedFlagSets
	rec := fss.FlagSet("recommended")
	rec.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; in-cluster configuration when empty.")
	rec.BoolVar(&f.leaderElect, "leader-elect", true, "Elect a leader on a coordination.k8s.io Lease so that only one replica acts.")
	rec.StringVar(&f.leaseNS, "leader-elect-namespace", "", "Namespace of the Lease; the Pod's namespace when empty (default outside a cluster).")
	f.shared.AddFlags(rec, "", "")
	rec.Float32Var(&f.qps, "kube-api-qps", 20, "Queries per second to the API server; node status writes go first within it.")
	rec.IntVar(&f.burst, "kube-api-burst", 30, "Burst of queries to the API server.")
	other := fss.FlagSet("other")
	other.StringVar(&f.leaseName, "leader-elect-lease-name", "adc", "Name of the leader election Lease.")
	other.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits after the last renewal before it takes the lease.")
	other.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying to renew before it gives up leading.")
	other.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease (kube-controller-manager's default): a standby takes a released lease within it, so it bounds the gap of a rolling upgrade. Keep it at 1s or more: client-go compares lease records in whole seconds, so with renewals less than a second apart a standby may time the lease from an earlier one and take it up to a second early.")
	other.DurationVar(&f.nodeStatusMaxDelay, "node-status-max-delay", 0, "If positive, how long an attached volume may wait to be listed in node status while other attaches of its node finish (fewer, later patches). 0 writes at once; what attaches while a node's write is in flight goes in its next write.")
	other.IntVar(&f.createsInFlight, "creates-in-flight", 0, "How many VolumeAttachment creates are sent at once. 0 sizes it from --kube-api-qps so that creates go at the budget's rate (QPS x 100 ms, 4 to 128). A smaller number creates later but lists the first volumes sooner when the API server has no CPU to spare (the attacher's status writes then wait behind fewer creates).")
	other.DurationVar(&f.resync, "resync-period", 0, "Informer resync period; 0 disables resync (events and backoff drive every retry).")
	f.serving.AddFlags(&fss)
	f.profiling.add(fss.FlagSet("debugging"))
	logsapi.AddFlags(f.logging, fss.FlagSet("logging"))
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
	return cmd
}

// loggingFeatureGate enables the logging features at their Kubernetes defaults (JSON output
// is beta, on by default), as in the Kubernetes components.
func loggingFeatureGate() featuregate.FeatureGate {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(fmt.Sprintf("registering logging feature gates: %v", err))
	}
	return fg
}

// controllerOptions turns flags into controller options, with errors that name the flag.
func (f *controllerFlags) controllerOptions() (adc.Options, error) {
	opts := adc.DefaultOptions()
	f.shared.ApplyTo(&opts)
	switch {
	case f.qps <= 0 || f.burst <= 0:
		return opts, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", f.qps, f.burst)
	case f.nodeStatusMaxDelay < 0:
		return opts, fmt.Errorf("--node-status-max-delay must not be negative, got %s", f.nodeStatusMaxDelay)
	case f.createsInFlight < 0:
		return opts, fmt.Errorf("--creates-in-flight must not be negative, got %d", f.createsInFlight)
	case f.leaderElect && !(f.leaseDuration > f.renewDeadline && f.renewDeadline > f.retryPeriod && f.retryPeriod > 0):
		return opts, fmt.Errorf("leader election needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s) > 0",
			f.leaseDuration, f.renewDeadline, f.retryPeriod)
	}
	opts.NodeStatusMaxDelay = f.nodeStatusMaxDelay
	opts.CreatesInFlight = f.createsInFlight
	if err := f.serving.Validate(); err != nil {
		return opts, err
	}
	return opts, opts.Validate()
}

func runController(parent context.Context, f *controllerFlags) error {
	setControllerGC()
	defer logs.FlushLogs()
	opts, err := f.controllerOptions()
	if err != nil {
		return err
	}
	adcMetrics, err := metrics.Legacy()
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	opts.Observer = adcMetrics
	base, err := restConfig(f.kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	base.UserAgent = "adc-controller"
	// One budget of --kube-api-qps/--kube-api-burst, in which node status writes go first.
	clients, err := volumeattach.NewClients(base, f.qps, f.burst)
	if err != nil {
		return err
	}
	client, dyn := clients.Client, clients.Dynamic
	opts.NodeStatus, opts.APIBudget = clients.NodeStatus, clients.Budget

	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.Background().WithName("adc")
	ctx = klog.NewContext(ctx, logger)

	// The controller of the current leadership term, for the readiness check, the state
	// metrics and the dashboard.
	var (
		mu      sync.Mutex
		current *adc.Controller
		// leading is set as run starts, before the controller exists: from the moment it
		// takes the Lease a replica is not ready until its caches have synced, with no
		// instant in between where it would still look like a ready standby.
		leading bool
	)
	srv := server.New()
	srv.AddHealthCheck(server.Check{Name: "ping", Check: func(*http.Request) error { return nil }})
	srv.AddReadyCheck(server.Check{Name: "informer-sync", Check: func(*http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case current == nil && (leading || !f.leaderElect):
			return fmt.Errorf("controller not started yet")
		case current != nil && !current.HasSynced():
			return fmt.Errorf("informer caches not synced yet")
		}
		return nil // a standby replica is ready: it is healthy and waiting for the lease
	}})
	// State metrics and the dashboard describe the controller of the current leadership
	// term; a standby replica exports no state metrics and shows a standby page.
	currentView := func() rollout.ControllerView {
		mu.Lock()
		defer mu.Unlock()
		if current == nil {
			return nil
		}
		return current
	}
	serving.Rollout(srv, adcMetrics, opts.Migration, currentView)
	if err := serving.Checks(srv, base, opts.Migration, opts.MaxWaitForUnmount, currentView); err != nil {
		return err
	}
	f.profiling.install(srv)
	serveErr, err := serve(ctx, srv, f.serving, f.kubeconfig)
	if err != nil {
		return err
	}

	run := func(ctx context.Context) {
		mu.Lock()
		leading = true
		mu.Unlock()
		// adc owns this factory, so its caches keep only what adc reads (most of its memory).
		factory := adc.NewInformerFactory(client, f.resync)
		ctrl, err := adc.New(client, dyn, factory, opts)
		if err != nil {
			logger.Error(err, "Creating the controller")
			return
		}
		mu.Lock()
		current = ctrl
		mu.Unlock()
		factory.Start(ctx.Done())
		ctrl.Run(ctx, f.shared.Workers)
		factory.Shutdown()
	}
	if !f.leaderElect {
		run(ctx)
		return firstErr(serveErr)
	}
	lost, err := runWithLeaderElection(ctx, f, base, srv, run)
	if err != nil {
		return err
	}
	if lost {
		return fmt.Errorf("lost the leader election lease %s/%s; exiting so the Pod restarts and rejoins the election", leaseNamespace(f), f.leaseName)
	}
	return firstErr(serveErr)
}

// runWithLeaderElection runs run while this replica holds the Lease. The election has its own
// client, so throttling on the controller's client cannot cost the lease. It returns once
// ctx ends or the lease is lost, after run has drained its workers.
func runWithLeaderElection(ctx context.Context, f *controllerFlags, base *rest.Config, srv *server.Server, run func(context.Context)) (lost bool, err error) {
	logger := klog.FromContext(ctx)
	leCfg := rest.CopyConfig(base)
	leCfg.UserAgent = "adc-leader-election"
	leCfg.QPS, leCfg.Burst, leCfg.RateLimiter = 5, 10, nil
	leClient, err := kubernetes.NewForConfig(leCfg)
	if err != nil {
		return false, fmt.Errorf("building the leader election client: %w", err)
	}
	host, _ := os.Hostname()
	id := host + "_" + uuid.NewString()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, leaseNamespace(f), f.leaseName,
		leClient.CoreV1(), leClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return false, fmt.Errorf("creating the leader election lock: %w", err)
	}
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	srv.AddHealthCheck(server.Check{Name: "leader-election", Check: watchdog.Check})

	var wg sync.WaitGroup
	var lostLease bool
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   f.leaseDuration,
		RenewDeadline:   f.renewDeadline,
		RetryPeriod:     f.retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Name:            f.leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				wg.Add(1)
				defer wg.Done()
				logger.Info("Became the leader; starting the controller", "identity", id)
				run(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					lostLease = true
					logger.Error(nil, "Lost the leader election lease; stopping the controller", "identity", id)
				}
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					logger.Info("Another replica leads; standing by", "leader", identity)
				}
			},
		},
	})
	wg.Wait()
	return lostLease, nil
}

// leaseNamespace is --leader-elect-namespace, else the Pod's namespace, else "default".
func leaseNamespace(f *controllerFlags) string {
	if f.leaseNS != "" {
		return f.leaseNS
	}
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// firstErr returns a listener's error if one already ended with one.
func firstErr(errs chan error) error {
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
