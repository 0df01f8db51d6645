// Package adc is the migration-aware attach/detach controller: it watches pods, claims,
// volumes, nodes, CSINodes, CSIDrivers and VolumeAttachments through one shared informer
// factory and, node by node, makes the attachments the scheduled pods need and removes the
// ones nobody needs, without ever detaching a volume it is unsure about.
//
// Where things are:
//
//	controller.go, options.go   New, Run, the node and status queues and their workers; Options,
//	                            adc's own informer factory, its name in kube-controller-manager
//	flags.go                    the flags every host shares (FlagOptions)
//	handlers.go                 informer event handlers: what change re-decides which node
//	stores.go                   the by-node indexes; what memory and the checker read of the stores
//	reconcile.go                syncNode: read, plan (internal/nodeplan), apply the pairs' steps;
//	                            Event reasons, one Event per pod and reason; held pairs' backoff
//	desired.go                  desired state: every active pod's volumes, decided by pkg/migration
//	detach.go                   applying the detach steps: fresh reads, confirmations, deletes;
//	                            detach of deleted nodes
//	detachpolicy.go             which DetachPolicy rule a volume gets; pods freed by evidence
//	othercontroller.go          the fence while another attach/detach controller writes
//	readmodel.go                what adc reports (pkg/readmodel): pair states, operations, flips,
//	                            managed nodes
//	clusterreader.go            the informer caches as a plan.Reader, for the dashboard's explain
//
// and, under internal/, one job per package, each owning its state and lock if it has any;
// none imports pkg/adc:
//
//	attachstate  adc's memory between reconciles (actual state plus expectations), behind one
//	             lock, with its invariants; every volume in it is its unique volume name
//	actual       a node's actual state, rebuilt from memory's view; which attachment is a volume's
//	nodeplan     the plan of a node's reconcile, pure: steps for each pair and attachment
//	creates      the create queue: decided VolumeAttachment creates, sent by its own workers
//	nodestatus   status.volumesAttached, written from the status queue; the per-node status locks
//	expectcheck  the checker that ends create expectations the informer never will
//	retry        the queues' retry backoff: doubling per failed retry, not per failure
//	intree       the calls to a host's in-tree attacher, and the periodic check of their result
//	cached       the compact informer forms; which VolumeAttachment updates change what adc reads
//	seedapi      the seed-API and DetachPolicy sources; policystatus: DetachPolicy status
//	report       keeps pair states, operations and flips (pkg/readmodel's types); multimap
//	othercontroller  notices another attach/detach controller's writes; fences adc's meanwhile
//
// pkg/migration decides, pkg/volumeattach writes, pkg/kcm embeds adc in
// kube-controller-manager.
package adc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/creates"
	"github.com/migration-aware/adc/pkg/adc/internal/expectcheck"
	"github.com/migration-aware/adc/pkg/adc/internal/intree"
	"github.com/migration-aware/adc/pkg/adc/internal/nodestatus"
	"github.com/migration-aware/adc/pkg/adc/internal/othercontroller"
	"github.com/migration-aware/adc/pkg/adc/internal/policystatus"
	"github.com/migration-aware/adc/pkg/adc/internal/report"
	"github.com/migration-aware/adc/pkg/adc/internal/retry"
	"github.com/migration-aware/adc/pkg/adc/internal/seedapi"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// ComponentName is the Event source component and the controller's name in hosts.
const ComponentName = "adc"

const (
	nodeQueueName   = "adc_node"
	statusQueueName = "adc_node_status"
)

// Controller reconciles attachments node by node. Create it with New and start it with Run.
type Controller struct {
	client kubernetes.Interface
	opts   Options

	pods       cache.Indexer
	claimUsers *cached.ClaimUsers // the pods of each claim, kept by the pod handler
	nodes      corelisters.NodeLister
	csiNodes   cache.Indexer
	vas        cache.Indexer
	nodeInfos  *seedapi.NodeInfoSource
	synced     []cache.DoneChecker

	// seedDrivers reads seed-API CSIDrivers; nil unless --driver-info-source is seed or auto.
	seedDrivers *seedapi.DriverSource

	// policySource reads DetachPolicies (nil without a dynamic client: the built-in rule
	// only); detachRules are the rules compiled from them; policyStatus writes adc's verdict
	// into each policy's status.
	policySource *seedapi.PolicySource
	detachRules  atomic.Pointer[migration.DetachPolicies]
	policyStatus *policystatus.Writer

	// nodeQueue carries node names whose attachments must be reconciled.
	nodeQueue workqueue.TypedRateLimitingInterface[string]
	// statusQueue carries node names whose status.volumesAttached may need a patch; it is
	// separate so that status writes are coalesced per node, off the per-volume path.
	statusQueue workqueue.TypedRateLimitingInterface[string]

	attachments volumeattach.AttachmentWriter
	recorder    record.EventRecorder
	broadcaster record.EventBroadcaster
	// creates is the create queue: the VolumeAttachment creates node reconciles decided, sent
	// by its own workers (Options.CreatesInFlight), so creates are not limited by how many
	// nodes reconcile at once.
	creates *creates.Queue
	// nodeStatus writes the nodes' status.volumesAttached from statusQueue; its locks also
	// serialize, per node, status writes and detach decisions.
	nodeStatus *nodestatus.Updater
	// expectations ends the create expectations the informer never will.
	expectations *expectcheck.Checker
	// inTree calls the host's in-tree attacher, if any.
	inTree *intree.Plugins

	lookups cached.Lookups

	flips *report.Flips

	// mem is adc's memory between reconciles (package attachstate: its own lock, its operations,
	// its invariants); ops the attach and detach operations, under way and finished, for
	// metrics and the dashboard.
	mem *attachstate.State
	ops *report.Operations

	// pairs is the snapshot of every node's pairs, for metrics and the dashboard.
	pairs *report.Pairs
	// started is set once the caches have synced and the workers started.
	started atomic.Bool

	// guard notices another attach/detach controller writing what adc owns, and fences
	// every write of adc while it does (othercontroller.go).
	guard *othercontroller.Guard
}

// New builds a controller on a shared informer factory. It registers the informers and
// indexers it needs, so the host must call factory.Start after New; Run waits for the caches.
// dyn may be nil when the node migration source is csinode and the driver-info source is
// csidriver (the seed-API CRDs are read through it).
func New(client kubernetes.Interface, dyn dynamic.Interface, factory informers.SharedInformerFactory, opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		client:      client,
		opts:        opts,
		attachments: opts.Attachments,
		recorder:    opts.Recorder,
		claimUsers:  cached.NewClaimUsers(),
		ops:         report.NewOperations(recentOperationsSize, opts.Observer, opts.Clock),
		flips:       report.NewFlips(),
		pairs:       report.NewPairs(),
	}
	if c.attachments == nil {
		c.attachments = &volumeattach.ClientAttachmentWriter{Client: client}
	}
	statusWriter := opts.NodeStatus
	if statusWriter == nil {
		statusWriter = &volumeattach.ClientStatusWriter{Client: client}
	}
	// Every write goes through the guard: none is sent while another attach/detach
	// controller writes, not even one decided just before adc noticed.
	c.guard = othercontroller.New(othercontroller.Options{OwnManager: volumeattach.FieldManager,
		QuietPeriod: opts.OtherControllerQuietPeriod, Clock: opts.Clock})
	c.attachments = othercontroller.Attachments{Inner: c.attachments, Guard: c.guard}
	statusWriter = othercontroller.Status{Inner: statusWriter, Guard: c.guard}
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster(record.WithContext(context.Background()))
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: ComponentName})
	}
	c.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig[string](
		retry.New(opts.Clock, retry.DefaultBase, retry.DefaultMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: nodeQueueName, Clock: opts.Clock})
	c.statusQueue = workqueue.NewTypedRateLimitingQueueWithConfig[string](
		retry.New(opts.Clock, retry.DefaultBase, retry.DefaultMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: statusQueueName, Clock: opts.Clock})

	podInf := factory.Core().V1().Pods().Informer()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	nodeInf := factory.Core().V1().Nodes()
	csiNodeInf := factory.Storage().V1().CSINodes()
	driverInf := factory.Storage().V1().CSIDrivers()
	vaInf := factory.Storage().V1().VolumeAttachments().Informer()
	if err := addIndexers(podInf, vaInf); err != nil {
		return nil, err
	}
	c.pods = podInf.GetIndexer()
	c.nodes = nodeInf.Lister()
	c.csiNodes = csiNodeInf.Informer().GetIndexer()
	c.vas = vaInf.GetIndexer()
	c.lookups = cached.Lookups{PVCs: pvcInf.Informer().GetIndexer(), PVs: pvInf.Informer().GetIndexer(), Drivers: driverInf.Informer().GetIndexer()}
	c.mem = attachstate.New(attachstate.Options{Store: stores{c}, Volumes: stores{c}, Clock: opts.Clock, NewBackOff: c.newBackoff})
	c.creates = creates.New(creates.Options{Writer: c.attachments, Memory: c.mem, Abort: c.ops.Abort,
		Wake: c.enqueueNode, Retry: c.nodeQueue.AddAfter, Clock: opts.Clock})
	c.nodeStatus = nodestatus.New(nodestatus.Options{Nodes: c.nodes, Memory: c.mem, PVs: &c.lookups, Client: client, Writer: statusWriter,
		Clock: opts.Clock, MaxDelay: opts.NodeStatusMaxDelay, Budget: opts.APIBudget, Wake: c.enqueueNode,
		Backlogged: c.attachesBacklogged})
	c.expectations = expectcheck.New(expectcheck.Options{Memory: c.mem, Store: stores{c}, Client: client, Clock: opts.Clock,
		Abort: c.ops.Abort, Wake: c.enqueueNode})
	c.inTree = intree.New(intree.Options{Attacher: opts.InTreeAttacher, Memory: c.mem, Ops: c.ops, Clock: opts.Clock,
		VerifyPeriod: opts.InTreeVerifyPeriod, Wake: c.enqueueNode})

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{podInf, c.podHandler()},
		{pvcInf.Informer(), c.pvcHandler()},
		{pvInf.Informer(), c.pvHandler()},
		{nodeInf.Informer(), c.nodeHandler()},
		{csiNodeInf.Informer(), c.csiNodeHandler()},
		{driverInf.Informer(), c.csiDriverHandler()},
		{vaInf, c.vaHandler()},
	}
	for _, h := range handlers {
		reg, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("registering event handler: %w", err)
		}
		// Synced once the handler has seen every object listed at start-up, not only once the
		// cache has them: claimUsers and vaSources are kept by the handlers.
		c.synced = append(c.synced, reg.HasSyncedChecker())
	}
	if opts.Migration.NodeSource != migration.NodeSourceCSINode {
		if dyn == nil {
			return nil, fmt.Errorf("node migration source %q reads CSINodeInfo objects and needs a dynamic client", opts.Migration.NodeSource)
		}
		c.nodeInfos = seedapi.NewNodeInfoSource(client, dyn, opts.CRDPollInterval, c.enqueueNode)
	}
	if opts.Migration.DriverSource.ReadsSeed() {
		if dyn == nil {
			return nil, fmt.Errorf("driver info source %q reads seed-API CSIDriver objects and needs a dynamic client", opts.Migration.DriverSource)
		}
		c.seedDrivers = seedapi.NewDriverSource(client, dyn, opts.CRDPollInterval, c.enqueueAllNodes)
		c.lookups.Seed = c.seedDrivers
	}
	// The built-in rule until DetachPolicies are read (or for good, without a dynamic
	// client): compiled once, not on every lookup.
	c.detachRules.Store(migration.CompileDetachPolicies(nil, opts.MaxWaitForUnmount))
	if dyn != nil {
		c.policySource = seedapi.NewPolicySource(client, dyn, opts.CRDPollInterval, c.policiesChanged)
		c.policyStatus = policystatus.New(policystatus.Options{
			Policy: c.policySource.Get, Verdicts: func() map[string]migration.PolicyVerdict { return c.DetachRules().Verdicts },
			Client: dyn, Recorder: c.recorder, FieldManager: volumeattach.FieldManager, Clock: opts.Clock})
	}
	return c, nil
}

// attachBurst is how many rounds of the create workers the attaches under way must number
// before a node's newly attached volumes wait for its pending attaches
// (nodestatus.Options.Backlogged), at most maxAttachBacklog. Under way is decided and not yet
// seen attached: queued, being created, or waiting for the attacher. Such a backlog keeps the
// API server busy with their creates and the attacher's status writes for that many round
// trips, and a status patch sent then takes one of their turns. A smaller backlog (a few
// pods landing at the default 20 QPS, 4 creates in flight) clears in a round trip or two,
// about what the patch would save, so its volumes are written at once.
const attachBurst = 8

// maxAttachBacklog caps the burst for large budgets: the 256 attaches under way that eight
// rounds of 32 creates are. At 100 creates in flight (1000 QPS) eight rounds would be 800,
// most of a 2,000-volume burst, whose last nodes would then be written volume by volume,
// one status patch per attach where the cap lets a node's volumes share one.
const maxAttachBacklog = 256

// attachesBacklogged reports whether the attaches under way are a burst (attachBurst).
func (c *Controller) attachesBacklogged() bool {
	return c.ops.AttachesUnderWay() >= min(attachBurst*c.opts.CreatesInFlight, maxAttachBacklog)
}

// Run waits for every informer's cache, then reconciles until ctx ends. Nothing is
// attached or detached before the caches have synced.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.nodeQueue.ShutDown()
	defer c.statusQueue.ShutDown()
	defer c.creates.ShutDown()
	logger := klog.FromContext(ctx)
	if c.broadcaster != nil {
		c.broadcaster.StartStructuredLogging(3)
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer c.broadcaster.Shutdown()
	}
	if workers < 1 {
		workers = 1
	}
	logger.Info("Starting attach/detach controller", "workers", workers, "createsInFlight", c.opts.CreatesInFlight, "migration", c.opts.Migration.String())
	defer logger.Info("Shutting down attach/detach controller")

	// Waits on each handler's done channel, not a 100 ms poll: a start or a failover decides
	// as soon as the last list is delivered.
	if !cache.WaitFor(klog.NewContext(ctx, logger.V(2)), "caches", c.synced...) {
		logger.Info("Stopped before the caches synced")
		return
	}
	if c.nodeInfos != nil {
		go c.nodeInfos.Run(ctx)
	}
	if c.seedDrivers != nil {
		// Blocks until the seed CSIDrivers are cached when their CRD is served, so no pair
		// is decided on an empty cache; returns at once when the CRD is not installed.
		c.seedDrivers.Start(ctx)
		if ctx.Err() != nil {
			return
		}
	}
	if c.policySource != nil {
		// Blocks until the DetachPolicies are cached when their CRD is served and readable,
		// so a restart never applies the built-in rule to a volume a policy holds.
		c.policySource.Start(ctx)
		if ctx.Err() != nil {
			return
		}
	}
	c.started.Store(true)
	c.enqueueAllNodes()
	// Ready from here on (HasSynced); benchmarks time a start or a failover by this line.
	logger.Info("Caches synced; reconciling every node", "nodes", c.nodeQueue.Len())

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, c.expectations.Check, c.opts.ExpectationCheckInterval)
	}()
	for i := 0; i < workers; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.runNodeWorker, 0) }()
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.runStatusWorker, 0) }()
	}
	for i := 0; i < c.opts.CreatesInFlight; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.creates.Work, 0) }()
	}
	if c.policyStatus != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.policyStatus.Run(ctx) }()
	}
	<-ctx.Done()
	c.nodeQueue.ShutDown()
	c.statusQueue.ShutDown()
	c.creates.ShutDown()
	wg.Wait()
	c.creates.DropQueued()
}

// HasSynced reports whether the caches have synced and workers started; hosts use it for
// readiness.
func (c *Controller) HasSynced() bool {
	return c.started.Load()
}

func (c *Controller) runNodeWorker(ctx context.Context) {
	for c.processNextNode(ctx) {
	}
}

func (c *Controller) processNextNode(ctx context.Context) bool {
	name, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(name)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", name)
	ctx = klog.NewContext(ctx, logger)
	retryAfter, err := c.syncNode(ctx, name)
	switch {
	case err != nil:
		logger.Error(err, "Reconciling node attachments failed, will retry")
		c.nodeQueue.AddRateLimited(name)
	default:
		c.nodeQueue.Forget(name)
		if retryAfter > 0 {
			c.nodeQueue.AddAfter(name, retryAfter)
		}
	}
	return true
}

func (c *Controller) runStatusWorker(ctx context.Context) {
	for c.processNextStatus(ctx) {
	}
}

func (c *Controller) processNextStatus(ctx context.Context) bool {
	name, quit := c.statusQueue.Get()
	if quit {
		return false
	}
	defer c.statusQueue.Done(name)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", name)
	ctx = klog.NewContext(ctx, logger)
	if wait, fenced := c.fenced(ctx); fenced {
		logger.V(4).Info("Not writing node status while another attach/detach controller writes", "retryAfter", wait)
		c.statusQueue.Forget(name)
		c.statusQueue.AddAfter(name, wait)
		return true
	}
	retryAfter, err := c.nodeStatus.Sync(ctx, name)
	switch {
	case err != nil:
		logger.Error(err, "Updating node status.volumesAttached failed, will retry")
		c.statusQueue.AddRateLimited(name)
	default:
		c.statusQueue.Forget(name)
		if retryAfter > 0 {
			c.statusQueue.AddAfter(name, retryAfter)
		}
	}
	return true
}

func (c *Controller) enqueueNode(name string) {
	if name != "" {
		c.nodeQueue.Add(name)
	}
}

// enqueueAllNodes re-reconciles every node adc knows of: nodes in the cache and nodes that
// still have VolumeAttachments (a deleted node's attachments must go too).
func (c *Controller) enqueueAllNodes() {
	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		c.nodeQueue.Add(n.Name)
	}
	for _, name := range c.vas.ListIndexFuncValues(byNodeIndex) {
		c.nodeQueue.Add(name)
	}
}
