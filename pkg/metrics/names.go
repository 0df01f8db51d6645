package metrics

// Metric names, for tests, documentation and dashboards. Upstream names first.
const (
	// TotalVolumesName counts volumes in the desired and actual state of world per plugin.
	TotalVolumesName = "attachdetach_controller_total_volumes"
	// OperationDurationName is the attach/detach latency histogram.
	OperationDurationName = "storage_operation_duration_seconds"
	// ForcedDetachesName counts forced detaches per reason.
	ForcedDetachesName = "attachdetach_controller_forced_detaches"

	// NodesName counts managed nodes per in-tree plugin and node migration state.
	NodesName = "adc_migration_nodes"
	// ModeName is 1 for each in-tree plugin's configured migration mode.
	ModeName = "adc_migration_mode"
	// DecisionsName counts (pod volume, node) pairs per plugin and mechanism.
	DecisionsName = "adc_decisions"
	// HeldPairsName counts held pairs per mechanism.
	HeldPairsName = "adc_held_pairs"
	// HeldOldestAgeName is the age of the oldest held pair per mechanism.
	HeldOldestAgeName = "adc_held_pairs_oldest_age_seconds"
	// HeldRetriesName sums the backoff retries of the held pairs per mechanism.
	HeldRetriesName = "adc_held_pairs_retries"
	// MultiAttachName counts pairs waiting because a ReadWriteOnce volume is attached elsewhere.
	MultiAttachName = "adc_multi_attach_blocked_pairs"
	// VersionSkewName counts pairs held because of version skew.
	VersionSkewName = "adc_version_skew_pairs"
	// VolumesByPathName counts each in-tree plugin's pairs by path: csi, in-tree, held.
	VolumesByPathName = "adc_migration_volumes"
	// CompleteReadyName is 1 for each in-tree plugin it is safe to switch to complete now.
	CompleteReadyName = "adc_migration_complete_ready"
	// CompleteBlockersName counts what blocks switching each plugin to complete, by kind:
	// nodes (not reported migrated) and volumes (would change path).
	CompleteBlockersName = "adc_migration_complete_blockers"
	// DetachNodeReadsName counts the fresh (quorum) Node reads that confirm detaches, by
	// result: what never detaching on a stale cache costs in API calls.
	DetachNodeReadsName = "adc_detach_node_reads_total"
	// NodeFlipsName counts managed nodes reporting an in-tree plugin migrated or no longer
	// migrated, per plugin.
	NodeFlipsName = "adc_migration_node_flips_total"
	// DetachAfterNotReadyName is the histogram of the time from a node leaving Ready to adc
	// detaching one of its volumes, by the evidence that decided it.
	DetachAfterNotReadyName = "adc_detach_after_not_ready_seconds"
	// DetachHeldByPolicyName counts the volumes of nodes that are not Ready that a
	// DetachPolicy keeps attached (no timeout, no evidence yet), per policy.
	DetachHeldByPolicyName = "adc_detach_held_by_policy"
	// OtherControllerFencedName is 1 while adc writes nothing because another attach/detach
	// controller writes what adc owns.
	OtherControllerFencedName = "adc_other_controller_fenced"
	// OtherControllerWritesName counts the other controller's writes adc saw, by field
	// manager and object.
	OtherControllerWritesName = "adc_other_controller_writes_total"
)

// DetachLatencyBuckets span a detach at once on evidence (sub-second) to upstream's six
// minutes and beyond.
var DetachLatencyBuckets = []float64{.5, 1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 600, 1800}

// Label values of upstream's metrics.
const (
	// StateDesired and StateActual are the state label values of TotalVolumesName.
	StateDesired = "desired_state_of_world"
	StateActual  = "actual_state_of_world"
	// OperationAttach and OperationDetach are the operation_name label values.
	OperationAttach = "volume_attach"
	OperationDetach = "volume_detach"
	// StatusSuccess and StatusFailUnknown are the status label values, as upstream.
	StatusSuccess     = "success"
	StatusFailUnknown = "fail-unknown"
	// UnknownPlugin labels a volume whose plugin is not known (an unresolved claim).
	UnknownPlugin = "N/A"
)

// OperationBuckets are upstream's storage_operation_duration_seconds buckets.
var OperationBuckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}
