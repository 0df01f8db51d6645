// Package readmodel is what adc reports about itself, as its readers see it: the state of
// every (pod volume, node) pair, the attach and detach operations, the nodes' migration flips,
// and the Observer the controller tells as they happen. It is a leaf: metrics, the rollout
// report, the dashboard and the demo import it instead of the controller, so reading adc's
// state does not pull in the controller (and the controller's internals can change without
// touching its readers). The controller keeps these values in pkg/adc/internal/report.
package readmodel

import (
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// Phase is where a (pod volume, node) pair stands: a short answer to "why is my pod
// waiting" that the dashboard, metrics and the rollout report group by. The string values
// appear on the dashboard and in JSON, so they are part of the API.
type Phase string

const (
	// PhaseAttached: attached and (when the node needs it) listed in node status.
	PhaseAttached Phase = "attached"
	// PhaseAttaching: the attach is requested and not confirmed yet.
	PhaseAttaching Phase = "attaching"
	// PhaseNotNeeded: no attach phase (not-attachable, csi-no-attach).
	PhaseNotNeeded Phase = "not-needed"
	// PhaseHeld: wait, error, or no in-tree attacher; retried with backoff.
	PhaseHeld Phase = "held"
	// PhaseMultiAttach: a ReadWriteOnce volume still attached to another node.
	PhaseMultiAttach Phase = "multi-attach"
	// PhaseDetaching: no longer needed on the node; detach under way.
	PhaseDetaching Phase = "detaching"
	// PhaseDetachBlocked: no longer needed, but the kubelet still reports it in use.
	PhaseDetachBlocked Phase = "detach-blocked"
	// PhaseReleased: the pod is on a node that is not Ready whose DetachPolicy evidence
	// frees its volumes; nothing is attached there for it.
	PhaseReleased Phase = "released"
)

// PairState is the controller's view of one (pod volume, node) pair, or of an attachment no
// pod needs any more (Pod empty): one row per pair so that every reader (metrics, the
// dashboard, the rollout report, the demo) counts and explains from the same snapshot.
type PairState struct {
	Node   string
	Pod    string // namespace/name; empty for an attachment no pod needs
	Volume string // the pod's volume name
	PV     string
	Plugin string
	Driver string
	// Mechanism is the decision for this pair; for an attachment no pod needs, the mechanism
	// of the existing attachment (csi or in-tree).
	Mechanism        migration.Mechanism
	Phase            Phase
	Reason           string
	Retries          int
	NextRetry        time.Time
	VolumeAttachment string
	UniqueName       string
	// Since is when the pair entered its current phase, as far as this controller saw.
	Since time.Time
	// Detach is, on a node that is not Ready, what the volume's detach rule says: which
	// rule, whether evidence forces the detach, when a timeout will, or that it holds it.
	Detach *migration.DetachVerdict
}

// OperationKind is attach or detach: the operation label of upstream's metrics, kept as
// upstream spells it so existing dashboards keep working.
type OperationKind string

const (
	// OperationAttach: from the attach request (VolumeAttachment create, in-tree Attach) until
	// the volume is attached (status.attached, or the in-tree call returned).
	OperationAttach OperationKind = "attach"
	// OperationDetach: from the detach request until the VolumeAttachment is gone or the
	// in-tree Detach returned.
	OperationDetach OperationKind = "detach"
)

// Operation is one attach or detach, from request to end: metrics time it, the dashboard
// lists the last ones, and the rollout report counts failures per mechanism.
type Operation struct {
	Kind   OperationKind
	Node   string
	Volume string // unique name, or VolumeAttachment name when the unique name is unknown
	// Plugin is the volume plugin in upstream's metric terms: the in-tree plugin name for
	// in-tree and migrated volumes, kubernetes.io/csi:<driver> for native CSI volumes.
	Plugin    string
	Mechanism migration.Mechanism
	// Migrated is true for an in-tree volume attached through its CSI driver.
	Migrated bool
	Started  time.Time
	// Duration is zero while the operation is under way.
	Duration time.Duration
	// Err is the failure message; empty for success.
	Err string
}

// NodeFlip is a node reporting an in-tree plugin migrated, or no longer migrated: the
// moments an operator following a rollout (or a rollback) wants to see.
type NodeFlip struct {
	Time   time.Time
	Node   string
	Plugin string
	// Migrated is the new state.
	Migrated bool
}

// Observer is told about what the controller does, as it happens, so that counters never
// miss an event between two snapshots; the metrics package implements it. Calls are made
// from the controller's workers and must not block.
type Observer interface {
	OperationCompleted(Operation)
	// ForcedDetach is told the reason (a ForcedDetach value) of each detach of a volume
	// still reported in use.
	ForcedDetach(reason string)
	// NodeRead is told about each fresh (quorum) read of a Node that confirms a detach, with
	// its result (NodeReadOK, NodeReadNotFound, NodeReadError): the price of never detaching
	// on a stale cache.
	NodeRead(result string)
	// NodeFlip is told about a managed node reporting plugin migrated or no longer migrated.
	NodeFlip(plugin string)
	// DetachAfterNotReady is told, for each detach from a node that is not Ready, how long
	// after the node left Ready it was sent, and the evidence that decided it (a
	// migration.Evidence value).
	DetachAfterNotReady(evidence string, sinceNotReady time.Duration)
}

// The reasons of a forced detach; they label the forced detach counter, so they are API.
const (
	ForcedDetachOutOfService = "out-of-service"
	ForcedDetachNotReady     = "timeout"
	ForcedDetachNodeDeleted  = "node-deleted"
)

// The results of a fresh Node read that confirms a detach; they label a counter.
const (
	NodeReadOK       = "ok"
	NodeReadNotFound = "not-found"
	NodeReadError    = "error"
)

// OtherController is what adc saw of another attach/detach controller (kube-controller-manager's
// own, switched on next to adc): metrics, readiness, `adc status` and the dashboard all say
// from this one record whether adc is fenced, and why.
type OtherController struct {
	// Fenced is true while adc writes nothing because of it.
	Fenced bool
	// Manager, Object, Name and Node describe the last write seen: the field manager, what
	// it wrote (Node/status.volumesAttached or VolumeAttachment), that object's name and its
	// node. Empty when none was seen since adc started.
	Manager, Object, Name, Node string
	// Seen is when adc saw that write; Until when the fence ends if no other write is seen.
	Seen, Until time.Time
	// QuietPeriod is --other-controller-quiet-period.
	QuietPeriod time.Duration
	// Writes count the writes seen, by manager and object, sorted.
	Writes []OtherControllerWrites
}

// OtherControllerWrites counts another controller's writes of one kind, so an operator sees
// which controller keeps writing what.
type OtherControllerWrites struct {
	Manager, Object string
	Count           int64
}

// CSIPluginLabel is the volume_plugin label of a native CSI volume, spelled as upstream
// reports it so that one dashboard reads both controllers.
func CSIPluginLabel(driver string) string { return "kubernetes.io/csi:" + driver }
