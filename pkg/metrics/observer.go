package metrics

import (
	"strconv"
	"time"

	k8smetrics "k8s.io/component-base/metrics"

	"github.com/migration-aware/adc/pkg/readmodel"
)

// newOperationDuration returns upstream's storage_operation_duration_seconds histogram at the
// given stability level (see Register for why the level can change).
func newOperationDuration(level k8smetrics.StabilityLevel) *k8smetrics.HistogramVec {
	return k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Name:           OperationDurationName,
		Help:           "Storage operation duration",
		Buckets:        OperationBuckets,
		StabilityLevel: level,
	}, []string{"volume_plugin", "operation_name", "status", "migrated"})
}

// newForcedDetaches returns upstream's attachdetach_controller_forced_detaches counter.
func newForcedDetaches() *k8smetrics.CounterVec {
	return k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           ForcedDetachesName,
		Help:           "Number of times the A/D Controller performed a forced detach",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"reason"})
}

// newDetachNodeReads returns adc_detach_node_reads_total.
func newDetachNodeReads() *k8smetrics.CounterVec {
	return k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           DetachNodeReadsName,
		Help:           "Fresh (quorum) reads of a Node that adc made to confirm a detach is safe, by result",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result"})
}

// newNodeFlips returns adc_migration_node_flips_total.
func newNodeFlips() *k8smetrics.CounterVec {
	return k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           NodeFlipsName,
		Help:           "Managed nodes that reported an in-tree plugin migrated or no longer migrated, by plugin",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"plugin"})
}

var _ readmodel.Observer = (*Metrics)(nil)

// OperationCompleted records a finished attach or detach in storage_operation_duration_seconds
// with upstream's labels: volume_plugin (the in-tree plugin for in-tree and migrated volumes,
// kubernetes.io/csi:<driver> for native CSI), operation_name volume_attach|volume_detach,
// status success|fail-unknown and migrated "true"|"false". It never blocks.
func (m *Metrics) OperationCompleted(op readmodel.Operation) {
	name := OperationAttach
	if op.Kind == readmodel.OperationDetach {
		name = OperationDetach
	}
	status := StatusSuccess
	if op.Err != "" {
		status = StatusFailUnknown
	}
	plugin := op.Plugin
	if plugin == "" {
		plugin = UnknownPlugin
	}
	m.operations().WithLabelValues(plugin, name, status, strconv.FormatBool(op.Migrated)).Observe(op.Duration.Seconds())
}

// ForcedDetach counts a forced detach by reason (out-of-service, timeout, node-deleted).
func (m *Metrics) ForcedDetach(reason string) {
	m.forced().WithLabelValues(reason).Inc()
}

// NodeRead counts a fresh Node read made before a detach, by result (ok, not-found, error).
func (m *Metrics) NodeRead(result string) {
	m.nodeReads.WithLabelValues(result).Inc()
}

// NodeFlip counts a node reporting plugin migrated or no longer migrated.
func (m *Metrics) NodeFlip(plugin string) {
	m.nodeFlips.WithLabelValues(plugin).Inc()
}

// DetachAfterNotReady records a detach from a node that is not Ready in
// adc_detach_after_not_ready_seconds, labelled by the evidence that decided it.
func (m *Metrics) DetachAfterNotReady(evidence string, sinceNotReady time.Duration) {
	m.detachLatency.WithLabelValues(evidence).Observe(sinceNotReady.Seconds())
}

// newDetachLatency returns adc_detach_after_not_ready_seconds.
func newDetachLatency() *k8smetrics.HistogramVec {
	return k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Name:           DetachAfterNotReadyName,
		Help:           "Time from a node leaving Ready to adc detaching one of its volumes, by the evidence that decided it (out-of-service, cloud-shutdown, fenced, graceful-shutdown, timeout, not-in-use)",
		Buckets:        DetachLatencyBuckets,
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"evidence"})
}
