package adc

import (
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/intree"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// Options configures a Controller. Zero fields take the defaults of DefaultOptions, so
// hosts and tests set only what they care about.
type Options struct {
	// Migration is the per-plugin migration configuration, node migration source and
	// driver-info source.
	Migration migration.Config
	// MaxWaitForUnmount is how long a node may be not Ready before its volumes are detached
	// even though the kubelet still reports them in use.
	MaxWaitForUnmount time.Duration
	// NodeStatusMaxDelay, when positive, lets an attached volume wait (at most this long) to
	// be listed in its node's status.volumesAttached while the node's other attaches are
	// pending, trading latency for fewer patches. Zero, the default, writes at once: writes
	// are then coalesced only by what attaches while a write of the node is in flight.
	NodeStatusMaxDelay time.Duration
	// APIBudget, when set, tells whether the client budget adc writes through is spent right
	// now (volumeattach.PriorityLimiter). While it is, or while a burst of attaches is under
	// way (decided and not yet seen attached), a node's newly attached volumes wait for the
	// node's other pending attaches (at most nodestatus.SaturatedDelay, a second), so neither
	// the budget nor the API server is spent on one status patch per attach; otherwise every
	// status write goes at once.
	APIBudget APIBudget
	// CreatesInFlight is how many VolumeAttachment creates adc sends at once: the workers of
	// its create queue. Node reconciles decide and queue creates without waiting for them, so
	// creates flow at the rate the client budget and the API server allow, not at the rate
	// node workers finish. Zero: what APIBudget asks for when it can say
	// (volumeattach.PriorityLimiter.CreatesInFlight, from --kube-api-qps), else
	// DefaultCreatesInFlight. `adc controller --creates-in-flight` sets it.
	CreatesInFlight int
	// OtherControllerQuietPeriod is how long adc writes nothing after it last saw another
	// attach/detach controller write what adc owns (default
	// othercontroller.DefaultQuietPeriod); `adc controller --other-controller-quiet-period`.
	OtherControllerQuietPeriod time.Duration
	// Backoff is the retry schedule of held (wait and error) pairs.
	Backoff BackoffOptions
	// InTreeAttacher attaches in-tree volumes; nil when the host cannot (then in-tree pairs
	// are held with a Warning Event).
	InTreeAttacher InTreeAttacher
	// Attachments and NodeStatus are the write boundaries; nil means write through the
	// controller's clientset.
	Attachments volumeattach.AttachmentWriter
	NodeStatus  volumeattach.StatusWriter
	// Observer is told about finished operations and forced detaches (metrics); optional.
	Observer readmodel.Observer
	// Recorder records Events; nil means a recorder for component "adc" on the clientset.
	Recorder record.EventRecorder
	// Clock is injectable so tests can drive backoff and force-detach timing.
	Clock clock.WithTicker
	// ExpectationCheckInterval is how often pending VolumeAttachment expectations are held
	// against the informer store, to end those the store proves over after a watch gap or a
	// relist (no event says so). It reads memory only.
	ExpectationCheckInterval time.Duration
	// InTreeVerifyPeriod is how often the in-tree attachments adc remembers for a node are
	// checked with the InTreeAttacher's VolumesAreAttached, as kube-controller-manager's
	// reconciler does every --attach-detach-reconcile-sync-period (default 1 minute): an
	// attachment the cloud reports detached is forgotten and leaves node status.
	InTreeVerifyPeriod time.Duration
	// CRDPollInterval is how often adc looks for the seed-API CRDs (CSINodeInfo, CSIDriver)
	// when the node migration or driver-info source needs them and they are not installed yet.
	CRDPollInterval time.Duration
}

// InTreeVolume identifies an in-tree volume for an InTreeAttacher. PV or Inline is set when
// the controller knows the volume's spec; after a restart, a detach may only know UniqueName.
// It is memory's type: in-tree attachments have no API object, memory holds them.
type InTreeVolume = attachstate.InTreeVolume

// InTreeAttacher attaches volumes with in-tree volume plugins: Attach (returning the device
// path for node status), Detach (a volume not attached is success) and VolumesAreAttached (by
// unique name). adc cannot do that on its own (the plugins live in k8s.io/kubernetes); a host
// such as kube-controller-manager provides one. Without it, in-tree pairs are held with a
// Warning Event. Package intree makes the calls.
type InTreeAttacher = intree.Attacher

// APIBudget is a client request budget that can say whether it is spent, and if so about
// how long until a request would go.
type APIBudget interface {
	Saturated() (bool, time.Duration)
}

// createsSizer is an APIBudget that knows how many creates in flight it takes to spend it.
type createsSizer interface {
	CreatesInFlight() int
}

// DefaultCreatesInFlight is Options.CreatesInFlight when the API budget cannot size it.
const DefaultCreatesInFlight = 16

// BackoffOptions is the exponential backoff of held pairs: InitialInterval doubling by
// Multiplier up to MaxInterval, each delay randomized by +/- RandomizationFactor.
type BackoffOptions struct {
	InitialInterval     time.Duration
	Multiplier          float64
	MaxInterval         time.Duration
	RandomizationFactor float64
}

// DefaultWorkers is how many nodes adc reconciles in parallel (and how many node status
// writers it runs) unless told otherwise, on its own and inside kube-controller-manager.
const DefaultWorkers = 10

// DefaultOptions returns the options adc runs with unless told otherwise.
func DefaultOptions() Options {
	return Options{
		Migration:         migration.DefaultConfig(),
		MaxWaitForUnmount: 6 * time.Minute,
		// CreatesInFlight stays zero: New sizes it from the API budget it is given.
		Backoff: BackoffOptions{
			InitialInterval:     500 * time.Millisecond,
			Multiplier:          2,
			MaxInterval:         2 * time.Minute,
			RandomizationFactor: 0.2,
		},
		Clock:                    clock.RealClock{},
		CRDPollInterval:          30 * time.Second,
		ExpectationCheckInterval: time.Second,
		InTreeVerifyPeriod:       time.Minute,
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Migration.Modes == nil && o.Migration.NodeSource == "" && o.Migration.DriverSource == "" {
		o.Migration = d.Migration
	}
	if o.Migration.NodeSource == "" {
		o.Migration.NodeSource = d.Migration.NodeSource
	}
	if o.Migration.DriverSource == "" {
		o.Migration.DriverSource = d.Migration.DriverSource
	}
	if o.MaxWaitForUnmount == 0 {
		o.MaxWaitForUnmount = d.MaxWaitForUnmount
	}
	if o.CreatesInFlight == 0 {
		o.CreatesInFlight = DefaultCreatesInFlight
		if s, ok := o.APIBudget.(createsSizer); ok {
			o.CreatesInFlight = s.CreatesInFlight()
		}
	}
	if o.Backoff.InitialInterval == 0 {
		o.Backoff.InitialInterval = d.Backoff.InitialInterval
	}
	if o.Backoff.Multiplier == 0 {
		o.Backoff.Multiplier = d.Backoff.Multiplier
	}
	if o.Backoff.MaxInterval == 0 {
		o.Backoff.MaxInterval = d.Backoff.MaxInterval
	}
	if o.Clock == nil {
		o.Clock = d.Clock
	}
	if o.CRDPollInterval == 0 {
		o.CRDPollInterval = d.CRDPollInterval
	}
	if o.ExpectationCheckInterval == 0 {
		o.ExpectationCheckInterval = d.ExpectationCheckInterval
	}
	if o.InTreeVerifyPeriod == 0 {
		o.InTreeVerifyPeriod = d.InTreeVerifyPeriod
	}
	return o
}

// Validate reports options that cannot work, naming the option.
func (o Options) Validate() error {
	if err := o.Migration.Validate(); err != nil {
		return fmt.Errorf("migration config: %w", err)
	}
	if o.MaxWaitForUnmount < 0 {
		return fmt.Errorf("max-wait-for-unmount must not be negative, got %s", o.MaxWaitForUnmount)
	}
	if o.CreatesInFlight < 0 {
		return fmt.Errorf("creates in flight must not be negative, got %d", o.CreatesInFlight)
	}
	if o.Backoff.Multiplier < 1 {
		return fmt.Errorf("backoff multiplier must be at least 1, got %v", o.Backoff.Multiplier)
	}
	if o.Backoff.MaxInterval < o.Backoff.InitialInterval {
		return fmt.Errorf("backoff cap %s is below its initial interval %s", o.Backoff.MaxInterval, o.Backoff.InitialInterval)
	}
	if o.Backoff.RandomizationFactor < 0 || o.Backoff.RandomizationFactor >= 1 {
		return fmt.Errorf("backoff jitter must be in [0, 1), got %v", o.Backoff.RandomizationFactor)
	}
	return nil
}

// NewInformerFactory is the informer factory of adc running on its own (`adc controller`, the
// demo): its caches keep only what adc reads, in compact forms (package cached). Inside
// kube-controller-manager the host's factory is used as it is.
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return cached.NewInformerFactory(client, resync)
}

// ControllerManagerName is adc's canonical controller name inside kube-controller-manager:
// the name of its controller descriptor (and so of --controllers and of its /healthz/<name>
// check). It follows kube-controller-manager's naming rule: lower case words joined by "-",
// ending in "-controller".
const ControllerManagerName = "migration-aware-attach-detach-controller"
