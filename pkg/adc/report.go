package adc

import "github.com/migration-aware/adc/pkg/adc/internal/report"

// What adc reports about itself (pair states, operations, flips) lives in package report;
// these are its names in adc's API.
type (
	// Phase is where a (pod volume, node) pair stands.
	Phase = report.Phase
	// PairState is the controller's view of one (pod volume, node) pair, or of an attachment
	// no pod needs any more (Pod empty).
	PairState = report.PairState
	// OperationKind is attach or detach.
	OperationKind = report.OperationKind
	// Operation is one finished attach or detach, for metrics and the dashboard.
	Operation = report.Operation
	// Observer is told about finished operations, forced detaches, fresh node reads and flips.
	Observer = report.Observer
	// NodeFlip is a node reporting an in-tree plugin migrated, or no longer migrated.
	NodeFlip = report.NodeFlip
)

// The phases of a pair.
const (
	PhaseAttached      = report.PhaseAttached
	PhaseAttaching     = report.PhaseAttaching
	PhaseNotNeeded     = report.PhaseNotNeeded
	PhaseHeld          = report.PhaseHeld
	PhaseMultiAttach   = report.PhaseMultiAttach
	PhaseDetaching     = report.PhaseDetaching
	PhaseDetachBlocked = report.PhaseDetachBlocked
	PhaseReleased      = report.PhaseReleased
)

// The kinds of operations, and the reasons that label the forced detach counter.
const (
	OperationAttach          = report.OperationAttach
	OperationDetach          = report.OperationDetach
	ForcedDetachOutOfService = report.ForcedDetachOutOfService
	ForcedDetachNotReady     = report.ForcedDetachNotReady
	ForcedDetachNodeDeleted  = report.ForcedDetachNodeDeleted
)

// recentOperationsSize is how many finished operations the dashboard can show.
const recentOperationsSize = 200

// Snapshot returns every pair's current state, sorted by node, pod and volume. It is safe
// to call from any goroutine at any time; the slice is the caller's.
func (c *Controller) Snapshot() []PairState { return c.pairs.All() }

// RecentOperations returns the last finished attach and detach operations, newest first.
func (c *Controller) RecentOperations() []Operation { return c.ops.Recent() }

// OperationsUnderWay returns the CSI attaches and detaches requested and not yet seen ended
// by the informer, oldest first (Duration is zero).
func (c *Controller) OperationsUnderWay() []Operation { return c.ops.UnderWay() }

// RecentFlips returns the last flips of managed nodes (at most 100), newest first.
func (c *Controller) RecentFlips() []NodeFlip { return c.flips.Recent() }
