package metrics

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// The workqueue metrics provider must be installed before the controller creates its
	// queues; importing it here gives every user of this package workqueue_* metrics.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/rollout"
)

// Registry is where metrics are registered: a component-base KubeRegistry (tests use
// k8smetrics.NewKubeRegistry()) or, through Legacy, the process's legacy registry.
type Registry interface {
	Register(k8smetrics.Registerable) error
	CustomRegister(k8smetrics.StableCollector) error
}

// Metrics is one set of adc's metrics. It is the controller's Observer (operation latency and
// forced detaches) and owns the collectors that compute state metrics at scrape time from
// the view SetSource points at. Create it with New and register it with Register.
type Metrics struct {
	ops            atomic.Pointer[k8smetrics.HistogramVec]
	forcedDetaches atomic.Pointer[k8smetrics.CounterVec]
	nodeReads      *k8smetrics.CounterVec
	nodeFlips      *k8smetrics.CounterVec
	detachLatency  *k8smetrics.HistogramVec
	source         *viewSource
}

// New returns an unregistered set of metrics reading no controller yet.
func New() *Metrics {
	m := &Metrics{source: &viewSource{}, nodeReads: newDetachNodeReads(), nodeFlips: newNodeFlips(), detachLatency: newDetachLatency()}
	m.ops.Store(newOperationDuration(k8smetrics.ALPHA))
	m.forcedDetaches.Store(newForcedDetaches())
	return m
}

func (m *Metrics) operations() *k8smetrics.HistogramVec { return m.ops.Load() }
func (m *Metrics) forced() *k8smetrics.CounterVec       { return m.forcedDetaches.Load() }

// SetSource sets the function the state collectors call at every scrape to find the
// controller to describe: the controller of the current leadership term, or nil on a standby
// replica (which then exports no state metrics, so sums over replicas count the leader's
// state once). It may be called at any time, from any goroutine.
func (m *Metrics) SetSource(source func() rollout.ControllerView) { m.source.set(source) }

// Register registers every metric of the set in r. A metric a host already registered is
// not an error: when the host's metric is the same (prometheus.AlreadyRegisteredError), adc
// records into the host's, so kube-controller-manager's storage_operation_duration_seconds
// (stability BETA upstream, where adc declares ALPHA) and attachdetach_controller_forced_detaches
// also carry adc's operations; when it cannot be reused, adc's copy stays unregistered and a
// log line says so. Any other registration error is returned.
func (m *Metrics) Register(r Registry) error {
	logger := klog.Background().WithName("metrics")
	registered := false
	// ALPHA first; if a host holds upstream's BETA histogram of the same name, registering
	// at BETA finds (and adc then reuses) the host's.
	for _, level := range []k8smetrics.StabilityLevel{k8smetrics.ALPHA, k8smetrics.BETA} {
		h := newOperationDuration(level)
		existing, taken, err := register(r, h)
		if err != nil {
			return fmt.Errorf("registering %s: %w", OperationDurationName, err)
		}
		if !taken {
			m.ops.Store(h)
		} else if e, ok := existing.(*k8smetrics.HistogramVec); ok {
			m.ops.Store(e)
		} else {
			continue
		}
		registered = true
		break
	}
	if !registered {
		logger.Info("A host registered " + OperationDurationName + " with other labels or help; adc's operations are not recorded in it")
	}

	forced := newForcedDetaches()
	existing, taken, err := register(r, forced)
	switch c, ok := existing.(*k8smetrics.CounterVec); {
	case err != nil:
		return fmt.Errorf("registering %s: %w", ForcedDetachesName, err)
	case !taken:
		m.forcedDetaches.Store(forced)
	case ok:
		m.forcedDetaches.Store(c)
	default:
		logger.Info("A host registered " + ForcedDetachesName + " with other labels or help; adc's forced detaches are not counted in it")
	}

	for name, c := range map[string]*k8smetrics.CounterVec{DetachNodeReadsName: m.nodeReads, NodeFlipsName: m.nodeFlips} {
		if _, taken, err := register(r, c); err != nil {
			return fmt.Errorf("registering %s: %w", name, err)
		} else if taken {
			logger.Info("A host already registered " + name + "; adc's copy is not exported")
		}
	}

	if _, taken, err := register(r, m.detachLatency); err != nil {
		return fmt.Errorf("registering %s: %w", DetachAfterNotReadyName, err)
	} else if taken {
		logger.Info("A host already registered " + DetachAfterNotReadyName + "; adc's copy is not exported")
	}

	for _, c := range []k8smetrics.StableCollector{newUpstreamCollector(m.source), newRolloutCollector(m.source), newOtherControllerCollector(m.source)} {
		if err := r.CustomRegister(c); err != nil {
			if _, taken := alreadyRegistered(err); taken {
				logger.Info("A host already registered some of adc's state metrics; keeping the host's", "err", err.Error())
				continue
			}
			return fmt.Errorf("registering adc state metrics: %w", err)
		}
	}
	return nil
}

// register registers c. taken reports that the name was already registered; existing is
// then the registered collector when Prometheus could name it (the very same metric).
func register(r Registry, c k8smetrics.Registerable) (existing prometheus.Collector, taken bool, err error) {
	if err := r.Register(c); err != nil {
		if existing, ok := alreadyRegistered(err); ok {
			return existing, true, nil
		}
		return nil, false, err
	}
	return nil, false, nil
}

// alreadyRegistered reports whether err says the metric's name is taken, with the existing
// collector when the registry could return it. Prometheus reports a same-named metric with a
// different help text or labels (upstream's BETA histogram vs adc's ALPHA one) only by its
// message, hence the string match.
func alreadyRegistered(err error) (prometheus.Collector, bool) {
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return are.ExistingCollector, true
	}
	if strings.Contains(err.Error(), "a previously registered descriptor with the same fully-qualified name") {
		return nil, true
	}
	return nil, false
}

// legacy adapts the legacyregistry functions to Registry.
type legacy struct{}

func (legacy) Register(c k8smetrics.Registerable) error { return legacyregistry.Register(c) }
func (legacy) CustomRegister(c k8smetrics.StableCollector) error {
	return legacyregistry.CustomRegister(c)
}

var (
	legacyOnce    sync.Once
	legacyMetrics *Metrics
	legacyErr     error
)

// Legacy returns the process's metrics, registered in legacyregistry (served on /metrics) on
// the first call; later calls return the same set, so a host may call it for each controller
// it starts.
func Legacy() (*Metrics, error) {
	legacyOnce.Do(func() {
		legacyMetrics = New()
		legacyErr = legacyMetrics.Register(legacy{})
	})
	return legacyMetrics, legacyErr
}
