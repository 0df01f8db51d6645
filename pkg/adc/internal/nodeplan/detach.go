package nodeplan

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// DetachStep is what the reconcile does with an attachment no active pod on the node needs.
type DetachStep string

const (
	// WaitDeleted: its delete is under way (a deletion timestamp, or adc sent it).
	WaitDeleted DetachStep = "wait-deleted"
	// Withdrawn: its create was still queued and is not sent; nothing to detach.
	Withdrawn DetachStep = "withdrawn"
	// Blocked: it stays attached for now (Phase and Reason say why, RetryIn when to look).
	Blocked DetachStep = "blocked"
	// ReadNode: the cache allows the detach; decide it again on the node as the API server
	// has it (the cache can only stop a detach, never allow one).
	ReadNode DetachStep = "read-node"
	// Unlist: on the API server's node; drop it from status.volumesAttached first (mark it
	// detaching), then detach.
	Unlist DetachStep = "unlist"
	// Detach: on the API server's node; mark it detaching and detach it.
	Detach DetachStep = "detach"
)

// Unsent is what became of an attachment's create that had no answer yet when the node no
// longer needed it (creates.Queue.Withdraw).
type Unsent int

const (
	// NoCreate: the attachment is not an unanswered create of adc (or its answer came).
	NoCreate Unsent = iota
	// CreateCancelled: the create was still queued and is dropped.
	CreateCancelled
	// CreateAwaited: the create is in flight; its answer wakes the node.
	CreateAwaited
)

// DetachInput is what a detach is planned from.
type DetachInput struct {
	Attachment *actual.Attachment
	// Rule is the volume's detach rule (the one the pod side asks).
	Rule *migration.DetachRule
	// Unsent is what Withdraw said of an unanswered create.
	Unsent Unsent
	// Node is the node the plan is made on; Fresh says it is the API server's (a quorum
	// read), not the cache's. A nil fresh node: the API server no longer has it.
	Node  *v1.Node
	Fresh bool
	Now   time.Time
}

// DetachPlan is the plan of one attachment.
type DetachPlan struct {
	Step   DetachStep
	Phase  readmodel.Phase
	Reason string
	// RetryIn is when to look again though nothing changes (0: an event will tell).
	RetryIn time.Duration
	// Verdict is the rule's verdict on a node that is not Ready, for the views.
	Verdict *migration.DetachVerdict
	// HeldByPolicy is set when a DetachPolicy keeps the volume attached (a Normal Event).
	HeldByPolicy string
	// Forced is the evidence that forces the detach of a volume the kubelet reports in use
	// ("" for an ordinary detach); ForcedWhy is why it counts as in use.
	Forced    migration.Evidence
	ForcedWhy string
	// Evidence labels the detach-latency histogram of a detach from a node that is not Ready;
	// NotReadySince is when the node left Ready (zero when Ready).
	Evidence      migration.Evidence
	NotReadySince time.Time
	// UniqueName is the name the node lists the volume under, as the plan's node names it
	// (a VolumeAttachment whose PersistentVolume is gone is named from the node's lists).
	UniqueName string
	// StaleCache: the API server's node shows the volume in use where the cache did not, so
	// the cache is behind and no event may tell of the unmount: RetryIn is set.
	StaleCache bool
}

// StaleNodeRecheck is how soon a detach that only the API server's node blocked is decided
// again.
const StaleNodeRecheck = 5 * time.Second

// PlanDetach plans the detach of an attachment no active pod on the node needs. Only what is
// safe is detached: not reported in use by the kubelet (unless its rule forces the detach),
// not while pods on the node still use it (unless evidence released them), and only after
// node status stopped listing it. Steps that move a detach forward come only from a fresh
// node.
func PlanDetach(in DetachInput) DetachPlan {
	a := in.Attachment
	d := DetachPlan{Phase: readmodel.PhaseDetaching, UniqueName: a.UniqueName}
	switch {
	case a.Deleting:
		d.Step, d.Reason = WaitDeleted, "the VolumeAttachment is being deleted; waiting for the external-attacher to detach"
		return d
	case in.Unsent == CreateCancelled:
		d.Step, d.Reason = Withdrawn, "no active pod on the node uses the volume any more; its VolumeAttachment create was still queued and is not sent"
		return d
	case in.Unsent == CreateAwaited:
		d.Step, d.Phase = Blocked, readmodel.PhaseDetachBlocked
		d.Reason = "no active pod on the node uses the volume any more; it is detached once the create of its VolumeAttachment, in flight, is answered"
		return d
	}
	if !in.Fresh {
		if a.Released == nil && inUseBlocks(&d, in) {
			return d
		}
		d.Step = ReadNode
		return d
	}
	node := in.Node
	switch {
	case node == nil:
		d.Step, d.Phase = Blocked, readmodel.PhaseDetachBlocked
		d.Reason = "the API server no longer has the node; its volumes are detached once adc's cache shows the deletion"
		return d
	case !migration.IsManagedNode(node):
		d.Step, d.Phase = Blocked, readmodel.PhaseDetachBlocked
		d.Reason = "the node no longer has the " + migration.ManagedAnnotation + " annotation; adc leaves its volumes alone"
		return d
	}
	verdict := in.Rule.Verdict(node, in.Now)
	if a.Released != nil && !verdict.ReleasesPods {
		// The cache showed evidence that freed the volume from the node's pods; the API
		// server's Node no longer does (Ready again, taint removed): the pods keep it.
		d.Step, d.Phase = Blocked, readmodel.PhaseDetachBlocked
		d.Reason = "pods on the node still use the volume and the node as the API server has it now shows no evidence that frees it (policy " + in.Rule.Policy + "); kept"
		return d
	}
	if inUseBlocks(&d, in) {
		d.StaleCache = a.Released == nil
		if d.StaleCache && (d.RetryIn == 0 || StaleNodeRecheck < d.RetryIn) {
			d.RetryIn = StaleNodeRecheck
		}
		return d
	}
	d.NotReadySince = migration.NotReadySince(node)
	if inUse, why := a.InUseOn(node); inUse {
		d.Forced, d.ForcedWhy = verdict.Evidence, why
	}
	d.Evidence = notReadyLabel(node, d.Forced)
	if d.Forced == "" && a.Released != nil {
		// Not reported in use, and freed from its pods by evidence: the evidence decided it.
		d.Evidence = a.Released.Evidence
	}
	if d.UniqueName == "" && a.VA != nil {
		d.UniqueName = actual.UniqueNameOnNode(a.VA, node)
	}
	if d.UniqueName != "" && a.ListedOn(node) {
		d.Step, d.Reason = Unlist, "removing the volume from the node's status.volumesAttached before detaching it"
		return d
	}
	d.Step, d.Reason = Detach, "detaching: no active pod on the node uses the volume"
	if a.Released != nil {
		d.Reason = "detaching: " + a.Released.Reason + " (DetachPolicy " + a.Released.Rule + "), so the node's pods no longer use the volume"
	}
	return d
}

// inUseBlocks reports whether the plan's node shows the attachment in use by the kubelet with
// no reason to detach it anyway (its rule's verdict); then it fills in why and when to look
// again.
func inUseBlocks(d *DetachPlan, in DetachInput) bool {
	node := in.Node
	inUse, why := in.Attachment.InUseOn(node)
	if !inUse {
		return false
	}
	v := in.Rule.Verdict(node, in.Now)
	if v.Force {
		return false
	}
	d.Step, d.Phase = Blocked, readmodel.PhaseDetachBlocked
	if !migration.NotReadySince(node).IsZero() {
		d.Verdict = &v
	}
	wait := v.Wait(in.Now)
	switch {
	case v.Held:
		d.Reason = why + "; " + v.Reason
		d.HeldByPolicy = fmt.Sprintf("Volume %s stays attached to node %s: %s", in.Attachment.Name(), node.Name, v.Reason)
	case v.Rule == migration.BuiltInRule:
		d.Reason = why + "; it is detached once the kubelet unmounts it"
		if wait > 0 {
			d.Reason += fmt.Sprintf(", or in %s if the node stays not Ready", wait.Round(time.Second))
		}
	default:
		d.Reason = why + "; it is detached once the kubelet unmounts it, or as DetachPolicy " + v.Rule + " says: " + v.Reason
	}
	d.RetryIn = wait
	return true
}

// notReadyLabel is the detach-latency label of a detach from a node that is not Ready: the
// evidence that forced it, or, for a volume the kubelet no longer reports in use, the
// graceful shutdown that (with that proof) released it, or not-in-use.
func notReadyLabel(node *v1.Node, forced migration.Evidence) migration.Evidence {
	switch {
	case forced != "":
		return forced
	case migration.GracefulShutdown(node):
		return migration.EvidenceGracefulShutdown
	default:
		return migration.EvidenceNotInUse
	}
}

// Confirmed reports whether a detach planned on the fresh node may still be sent, planned
// again on the node read right before it: a node that came back since (Ready again, its
// evidence gone) still has the volume mounted, or its pods still use it.
func Confirmed(in DetachInput) (bool, string) {
	d := PlanDetach(in)
	switch d.Step {
	case Detach:
		return true, ""
	case Unlist:
		return false, "the node as the API server has it now lists the volume in status.volumesAttached again"
	}
	return false, d.Reason
}
