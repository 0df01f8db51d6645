package adc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/creates"
	"github.com/migration-aware/adc/pkg/adc/internal/intree"
	"github.com/migration-aware/adc/pkg/adc/internal/nodeplan"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// nodeRun accumulates the outcome of one reconcile of one node.
type nodeRun struct {
	c      *Controller
	node   *v1.Node
	now    time.Time
	states []*readmodel.PairState
	errs   []error
	// creates are the VolumeAttachments this run decided to create; they are queued for the
	// create workers together, once every pair of the node has been decided.
	creates []creates.Job
	// retryAfter is the earliest scheduled retry (held pairs, force-detach deadlines).
	retryAfter time.Duration
	held       map[pairKey]bool
	events     map[eventKey]bool
	// waiting are the volumes (unique names) this run found on another node and waits for.
	waiting map[string]bool
	// fresh is the node as the API server had it when a detach of this run first needed it
	// (freshNode); nil with freshRead set means the API server no longer has it.
	fresh     *v1.Node
	freshErr  error
	freshRead bool
	// unlockStatus releases the node's status lock, taken with the fresh read and held until
	// every detach of the run is decided (see nodestatus.Locks).
	unlockStatus func()
	// detaches are the detaches this run decided on, sent after the status lock is released.
	detaches []detachJob
	// pairsOfRun are the node's desired pairs, in plan order: a pair that shares another's
	// attach (two pods, or two PersistentVolumes of one disk) reads its outcome there.
	pairsOfRun []*pair
}

func (r *nodeRun) retryIn(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if r.retryAfter == 0 || d < r.retryAfter {
		r.retryAfter = d
	}
}

// syncNode reconciles one node: it decides every volume of the node's active pods, keeps
// what is attached, attaches what is missing, detaches what no pod needs (when safe), and
// asks the status worker to bring status.volumesAttached in line. It returns when the node
// should be looked at again even if nothing changes (backoff of held pairs, force-detach
// deadlines).
func (c *Controller) syncNode(ctx context.Context, name string) (time.Duration, error) {
	defer c.pairs.BeginSync(name)()
	logger := klog.FromContext(ctx)
	if wait, fenced := c.fenced(ctx); fenced {
		// Nothing decided, nothing written: the other controller's writes would fight ours.
		logger.V(4).Info("Not reconciling while another attach/detach controller writes", "retryAfter", wait)
		return wait, nil
	}
	now := c.opts.Clock.Now()
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return c.syncGoneNode(ctx, name, now)
	}
	if err != nil {
		return 0, fmt.Errorf("reading node %s from the informer cache: %w", name, err)
	}
	c.mem.NoteManaged(name, migration.IsManagedNode(node))
	if !migration.IsManagedNode(node) {
		logger.V(4).Info("Node is not managed by the attach/detach controller, leaving it alone", "annotation", ManagedAnnotation)
		c.flips.Forget(name)
		c.mem.Unmanaged(node)
		c.pairs.Set(name, nil, now)
		return 0, nil
	}
	c.trackFlips(logger, node, now)

	verifyIn := c.inTree.Verify(ctx, name, now)
	pairs, released := c.releasedByEvidence(node, c.desiredPairs(node), now)
	atts := actual.Read(c.mem, c.lookups, node)
	present := make(map[string]bool, len(atts))
	for _, a := range atts {
		present[a.UniqueName] = true
	}
	c.mem.PruneDetaching(name, present)
	idx := actual.NewIndex(atts)
	for p, v := range released {
		if a := idx.Find(p.ids); a != nil {
			key := detachVolumeOfPair(p)
			a.Released, a.Detach = &v, &key
		}
	}
	toCreate := 0
	for _, p := range pairs {
		if p.att = idx.Find(p.ids); p.att != nil {
			p.att.Matched = true
			c.noteDetachVolume(p, p.att)
		} else if p.d.Mechanism == migration.MechanismCSI {
			toCreate++
		}
	}
	c.mem.SetCreating(name, toCreate)
	defer c.mem.SetCreating(name, 0)

	r := &nodeRun{
		c: c, node: node, now: now,
		held:       map[pairKey]bool{},
		events:     map[eventKey]bool{},
		waiting:    map[string]bool{},
		pairsOfRun: pairs,
	}
	if verifyIn > 0 {
		r.retryIn(verifyIn)
	}
	plans := nodeplan.PlanPairs(planPairs(pairs), c.inTree.Available())
	for i, p := range pairs {
		r.applyPair(ctx, p, plans[i], plans)
	}
	for p, v := range released {
		st := r.pairState(p)
		st.Phase, st.Reason, st.Detach = readmodel.PhaseReleased, "not attached here: "+v.Reason+" (DetachPolicy "+v.Rule+")", &v
		r.states = append(r.states, st)
	}
	for _, j := range r.creates {
		c.creates.Add(j)
	}
	for _, a := range atts {
		if !a.Matched {
			r.reconcileDetach(ctx, a)
		}
	}
	if r.unlockStatus != nil {
		r.unlockStatus()
	}
	for _, j := range r.detaches {
		if (j.forced != "" || j.a.Released != nil) && !r.confirmForced(ctx, j) {
			continue
		}
		if r.detach(ctx, j.a, j.forced) && !j.notReadySince.IsZero() && c.opts.Observer != nil {
			c.opts.Observer.DetachAfterNotReady(string(j.evidence), now.Sub(j.notReadySince))
		}
	}
	c.mem.ForgetUnrenewed(name, r.held, r.waiting, r.events)
	states := make([]readmodel.PairState, len(r.states))
	for i, st := range r.states {
		states[i] = *st
	}
	c.pairs.Set(name, states, now)
	c.statusQueue.Add(name)
	logger.V(4).Info("Reconciled node", "pairs", len(pairs), "attachments", len(atts), "retryAfter", r.retryAfter)
	return r.retryAfter, errors.Join(r.errs...)
}

func (r *nodeRun) pairState(p *pair) *readmodel.PairState {
	st := &readmodel.PairState{
		Node: r.node.Name, Pod: p.podKey, Volume: p.volume, PV: p.pvName,
		Plugin: p.d.Plugin, Driver: p.d.Driver, Mechanism: p.d.Mechanism,
		Reason: p.d.Reason, VolumeAttachment: p.d.VolumeAttachmentName, UniqueName: p.d.UniqueName,
	}
	if !migration.NotReadySince(r.node).IsZero() {
		// What would detach the volume once its pod leaves the lost node, for the views.
		v := r.c.ruleOfPair(p).Verdict(r.node, r.now)
		st.Detach = &v
	}
	return st
}

// planPairs is the node's desired pairs as the plan reads them.
func planPairs(pairs []*pair) []nodeplan.Pair {
	out := make([]nodeplan.Pair, len(pairs))
	for i, p := range pairs {
		out[i] = nodeplan.Pair{Decision: &p.d, ID: p.ids, Attachment: p.att}
	}
	return out
}

// applyPair carries out the plan of one desired pair (nodeplan.PlanPairs).
func (r *nodeRun) applyPair(ctx context.Context, p *pair, plan nodeplan.PairPlan, plans []nodeplan.PairPlan) {
	st := r.pairState(p)
	r.states = append(r.states, st)
	p.st = st
	switch plan.Step {
	case nodeplan.Keep:
		r.existing(p, p.att, st)
	case nodeplan.KeepHeld:
		r.existing(p, p.att, st)
		r.hold(ctx, p, st, "; the volume's existing attachment to the node is kept")
	case nodeplan.Shared:
		r.shared(p, r.pairsOfRun[plan.SharedWith], st)
	case nodeplan.Hold:
		r.hold(ctx, p, st, "")
	case nodeplan.HoldNoInTreeAttacher:
		st.Reason = intree.HeldReason(&r.c.opts.Migration, r.node.Name, p.d.Plugin, p.d.Driver, p.volume)
		r.hold(ctx, p, st, "")
	case nodeplan.NotNeeded:
		st.Phase = readmodel.PhaseNotNeeded
	case nodeplan.AttachCSI:
		r.attachCSI(p, st)
	case nodeplan.AttachInTree:
		r.attachInTree(ctx, p, st)
	default:
		st.Phase = readmodel.PhaseHeld
		st.Reason = fmt.Sprintf("unknown mechanism %q; this is a bug in adc", p.d.Mechanism)
	}
}

// shared describes a pair whose volume an earlier pair of the run attaches: it shares that
// attach's outcome, and a ReadWriteOnce conflict is reported for its pod too.
func (r *nodeRun) shared(p, first *pair, st *readmodel.PairState) {
	fs := first.st
	st.Phase, st.VolumeAttachment, st.UniqueName = fs.Phase, fs.VolumeAttachment, fs.UniqueName
	if fs.Phase == readmodel.PhaseMultiAttach || fs.Phase == readmodel.PhaseAttaching && first.d.Mechanism == migration.MechanismInTree {
		st.Reason = fs.Reason
	}
	if fs.Phase == readmodel.PhaseMultiAttach {
		r.waiting[memoryVolume(p.ids).Name] = true
		r.c.eventOnce(r.node.Name, p.podObject, p.podKey, v1.EventTypeWarning, ReasonFailedAttach, multiAttachMessage(p), r.events)
	}
}

// existing describes a pair whose volume is already attached (or attaching, or detaching)
// to the node, whatever mechanism made the attachment. A mechanism flip never detaches: the
// new mechanism applies to the next attach.
func (r *nodeRun) existing(p *pair, a *actual.Attachment, st *readmodel.PairState) {
	r.c.mem.CancelDetach(r.node.Name, a.UniqueName)
	st.UniqueName = a.UniqueName
	if a.VA != nil {
		st.VolumeAttachment = a.VA.Name
	} else {
		st.VolumeAttachment = ""
	}
	switch {
	case a.Deleting:
		st.Phase = readmodel.PhaseDetaching
		st.Reason = "a previous attachment of the volume to this node is being removed; it is attached again once the removal finishes"
	case a.Attached:
		st.Phase = readmodel.PhaseAttached
	default:
		st.Phase = readmodel.PhaseAttaching
	}
	if am := a.Mechanism(); am != p.d.Mechanism && (p.d.Mechanism == migration.MechanismCSI || p.d.Mechanism == migration.MechanismInTree) {
		st.Reason = p.d.Reason + "; the volume is already attached " + string(am) + " and stays attached that way (no detach and re-attach on a migration flip), " + string(p.d.Mechanism) + " applies to its next attach"
	}
	if a.VA != nil && a.VA.Status.AttachError != nil && !a.Attached {
		msg := fmt.Sprintf("AttachVolume.Attach failed for volume %q: %s", p.volume, a.VA.Status.AttachError.Message)
		r.c.eventOnce(r.node.Name, p.podObject, p.podKey, v1.EventTypeWarning, ReasonFailedAttach, msg, r.events)
		st.Reason = "the external-attacher reports: " + a.VA.Status.AttachError.Message
	}
}

// hold keeps a pair in wait or error: nothing is attached, nothing of it detached; it is
// retried with exponential backoff and re-decided at once when its node or driver changes.
func (r *nodeRun) hold(ctx context.Context, p *pair, st *readmodel.PairState, suffix string) {
	key := pairKey{Node: r.node.Name, Pod: p.podKey, Volume: p.volume}
	r.held[key] = true
	retries, next := r.c.mem.Hold(key, st.Reason, r.now)
	st.Retries, st.NextRetry = retries, next
	if st.Phase == "" || st.Phase == readmodel.PhaseAttached || st.Phase == readmodel.PhaseAttaching {
		st.Phase = readmodel.PhaseHeld
	}
	st.Reason += suffix
	r.retryIn(next.Sub(r.now))
	reason, eventType := holdReason(&p.d)
	r.c.eventOnce(r.node.Name, p.podObject, p.podKey, eventType, reason, st.Reason, r.events)
	klog.FromContext(ctx).V(4).Info("Holding volume", "pod", p.podRef(), "volume", p.volume, "mechanism", p.d.Mechanism, "retries", retries)
}

// attachCSI decides the VolumeAttachment of a pair, once the ReadWriteOnce rule allows it:
// the reservation is taken and the create expected before the create is queued (see
// creates.Queue.Add), so the create workers send only what was decided under those rules.
func (r *nodeRun) attachCSI(p *pair, st *readmodel.PairState) {
	if !r.reserve(p, st) {
		return
	}
	va := volumeattach.NewVolumeAttachment(p.d.VolumeAttachmentName, p.d.Driver, r.node.Name, p.d.Source)
	key := memoryVolume(p.ids).Name
	r.c.mem.ExpectCreate(va, key, r.now)
	r.c.startOp(readmodel.OperationAttach, va, p, r.now)
	st.Phase = readmodel.PhaseAttaching
	if msg := r.c.creates.TakeErr(va.Name); msg != "" {
		st.Reason = "creating the VolumeAttachment failed, will retry: " + msg
	}
	r.creates = append(r.creates, creates.Job{VA: va, Volume: key, Pod: p.podRef(), PodVolume: p.volume})
}

func (r *nodeRun) attachInTree(ctx context.Context, p *pair, st *readmodel.PairState) {
	if !r.reserve(p, st) {
		return
	}
	vol := InTreeVolume{Plugin: p.d.Plugin, UniqueName: p.d.UniqueName, Name: p.ids.Volume, PV: p.pv, Inline: p.inline}
	devicePath, err := r.c.inTree.Attach(ctx, vol, r.node.Name)
	if err != nil {
		msg := fmt.Sprintf("AttachVolume.Attach failed for volume %q: %v", p.volume, err)
		r.c.eventOnce(r.node.Name, p.podObject, p.podKey, v1.EventTypeWarning, ReasonFailedAttach, msg, r.events)
		r.errs = append(r.errs, fmt.Errorf("in-tree attach of %s to node %s: %w", p.d.UniqueName, r.node.Name, err))
		st.Phase = readmodel.PhaseAttaching
		st.Reason = msg
		return
	}
	klog.FromContext(ctx).V(2).Info("Attached in-tree volume", "uniqueName", p.d.UniqueName, "pod", p.podRef(), "devicePath", devicePath)
	st.Phase = readmodel.PhaseAttached
}

// memoryVolume names a pair's volume for memory: its ReadWriteOnce reservation, create
// expectation and waiters. It is the volume's identity, not its PersistentVolume's name, so
// that two PersistentVolumes of one disk are one volume to the ReadWriteOnce check. A
// variable only so the interleaving explorer's pv-key mutant can key by PersistentVolume
// and show that the check then lets the disk attach to two nodes.
var memoryVolume = actual.Identity.Key

// reserve applies the ReadWriteOnce rule: a volume that does not allow multi-attach is never
// attached to a second node, whatever PersistentVolume or mechanism names it there. It
// reserves the volume (its unique name) for this node while the attach is in flight; on a
// conflict it reports one FailedAttachVolume Event per waiting pod and registers the node to
// be woken when the other attachment is gone.
func (r *nodeRun) reserve(p *pair, st *readmodel.PairState) bool {
	if p.d.MultiAttachAllowed {
		return true
	}
	key := memoryVolume(p.ids)
	other := r.c.mem.Reserve(r.node.Name, key)
	if other == "" {
		return true
	}
	r.waiting[key.Name] = true
	st.Phase = readmodel.PhaseMultiAttach
	st.Reason = migration.MultiAttachReason(other)
	r.c.eventOnce(r.node.Name, p.podObject, p.podKey, v1.EventTypeWarning, ReasonFailedAttach, multiAttachMessage(p), r.events)
	return false
}

// multiAttachMessage is upstream's FailedAttachVolume message for a ReadWriteOnce volume
// attached to another node.
func multiAttachMessage(p *pair) string {
	return fmt.Sprintf("Multi-Attach error for volume %q Volume is already exclusively attached to one node and can't be attached to another", displayVolume(p))
}

func displayVolume(p *pair) string {
	if p.pvName != "" {
		return p.pvName
	}
	return p.volume
}

// holdReason is the Event reason and type of a held pair, named from what its decision waits
// for. A driver that has not registered on the node yet is a normal step of a node's start
// (the kubelet writes its CSINode annotation before the driver), so its Event is Normal.
func holdReason(d *migration.Decision) (reason, eventType string) {
	switch {
	case d.Mechanism == migration.MechanismWait && d.WaitCause == migration.WaitVolumeBinding:
		return ReasonWaitingForClaim, v1.EventTypeWarning
	case d.Mechanism == migration.MechanismWait && d.WaitCause == migration.WaitDriverRegistration:
		return ReasonWaitingForDriver, v1.EventTypeNormal
	case d.Mechanism == migration.MechanismWait:
		return ReasonWaitingForNode, v1.EventTypeWarning
	case d.Mechanism == migration.MechanismInTree:
		return ReasonNoInTreeAttacher, v1.EventTypeWarning
	}
	return ReasonDecisionError, v1.EventTypeWarning
}

// Event reasons. Operators search Events by reason; docs/reference.md lists them and
// docs/operating.md says what each means and what to do.
const (
	// ReasonFailedAttach is upstream's reason for attach failures and Multi-Attach errors.
	ReasonFailedAttach = "FailedAttachVolume"
	// ReasonWaitingForNode: the node has not reported its migration state yet.
	ReasonWaitingForNode = "WaitingForNodeMigrationState"
	// ReasonWaitingForDriver: the node's CSINode does not list the CSI driver the volume goes
	// through yet (its node plugin has not registered); no VolumeAttachment until it does.
	ReasonWaitingForDriver = "WaitingForDriverRegistration"
	// ReasonWaitingForClaim: the pod's claim is missing, unbound, or bound to a missing PV.
	ReasonWaitingForClaim = "WaitingForVolumeBinding"
	// ReasonDecisionError: the attach cannot be decided safely (bad volume, version skew).
	ReasonDecisionError = "AttachDecisionError"
	// ReasonNoInTreeAttacher: the node is not migrated and no in-tree attacher is available.
	ReasonNoInTreeAttacher = "InTreeAttacherUnavailable"
	// ReasonForcedDetach: a volume still reported in use was detached because its node is out
	// of service, not Ready for too long, or deleted.
	ReasonForcedDetach = "ForcedDetach"
)

// eventOnce records an Event on the pod (or node) of a node's reconcile unless the same pod already got the same reason with
// the same message from this controller: one Event per pod and reason, not one per retry.
// active collects the keys that are still current, so the memory is dropped once the
// condition clears.
func (c *Controller) eventOnce(node string, obj func() runtime.Object, podKey, eventType, reason, message string, active map[eventKey]bool) {
	k := eventKey{Pod: podKey, Reason: reason}
	active[k] = true
	if c.mem.EventChanged(node, k, message) {
		c.recorder.Event(obj(), eventType, reason, message)
	}
}

// newBackoff is the retry schedule of one held pair (Options.Backoff), on the controller's
// clock so that tests drive it.
func (c *Controller) newBackoff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     c.opts.Backoff.InitialInterval,
		RandomizationFactor: c.opts.Backoff.RandomizationFactor,
		Multiplier:          c.opts.Backoff.Multiplier,
		MaxInterval:         c.opts.Backoff.MaxInterval,
		MaxElapsedTime:      0, // held pairs are retried for as long as they are held
		Stop:                backoff.Stop,
		Clock:               clockAdapter{c.opts.Clock},
	}
	b.Reset()
	return b
}

type clockAdapter struct{ c interface{ Now() time.Time } }

func (a clockAdapter) Now() time.Time { return a.c.Now() }
