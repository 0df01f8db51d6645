package adc

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/policystatus"
	"github.com/migration-aware/adc/pkg/migration"
)

// Event reasons about DetachPolicies.
const (
	// ReasonInvalidDetachPolicy: a policy adc ignores, and why (Warning, on the policy).
	ReasonInvalidDetachPolicy = policystatus.ReasonInvalid
	// ReasonDetachHeldByPolicy: a policy keeps a volume of a node that is not Ready attached
	// (timeout Never, no evidence yet) (Normal, on the node).
	ReasonDetachHeldByPolicy = "DetachHeldByPolicy"
)

// DetachRules returns the detach rules in force: the valid DetachPolicies, compiled, and the
// built-in rule (upstream's) for what none selects.
func (c *Controller) DetachRules() *migration.DetachPolicies {
	if p := c.detachRules.Load(); p != nil {
		return p
	}
	// A Controller not made by New (unit tests): the built-in rule.
	return migration.CompileDetachPolicies(nil, c.opts.MaxWaitForUnmount)
}

// policiesChanged recompiles the rules after any DetachPolicy changed, re-decides every node
// (a policy change while a node is down takes effect at once) and queues every policy for
// its status.
func (c *Controller) policiesChanged() {
	list := c.policySource.List()
	c.detachRules.Store(migration.CompileDetachPolicies(list, c.opts.MaxWaitForUnmount))
	for _, p := range list {
		c.policyStatus.Enqueue(p.Name)
	}
	c.enqueueAllNodes()
}

// ruleOfAttachment returns the rule of an attached volume, by what the pod side selects it
// by, so both sides always ask one rule: the pod that released it in this reconcile, else
// what a pod said while the volume was attached (memory), else the attachment's own
// PersistentVolume (class, driver, plugin) or in-tree plugin. When its StorageClass cannot be
// known (its PersistentVolume is gone, an in-tree attachment learned from node status) it is
// the rule that forces nothing if some policy selects by class.
func (c *Controller) ruleOfAttachment(a *actual.Attachment) *migration.DetachRule {
	if a.Detach != nil {
		return c.DetachRules().For(*a.Detach)
	}
	if v, ok := c.mem.DetachVolume(a.Volume); ok {
		return c.DetachRules().For(v)
	}
	v, classKnown := c.detachVolumeOfAttachment(a)
	if !classKnown {
		return c.DetachRules().ForUnknownClass(v)
	}
	return c.DetachRules().For(v)
}

// detachVolumeOfAttachment is what an attachment tells of itself that policies select by,
// and whether that includes its StorageClass.
func (c *Controller) detachVolumeOfAttachment(a *actual.Attachment) (migration.DetachVolume, bool) {
	if it := a.InTree; it != nil {
		driver := migration.InTreePluginDriver(it.Volume.Plugin)
		switch {
		case it.Volume.PV != nil:
			return migration.DetachVolumeOf(it.Volume.PV, driver, it.Volume.Plugin), true
		case it.Volume.Inline != nil:
			return migration.DetachVolumeOf(nil, driver, it.Volume.Plugin), true
		}
		return migration.DetachVolumeOf(nil, driver, it.Volume.Plugin), false
	}
	if a.PVName == "" {
		// An inline volume: it has no class.
		return migration.DetachVolumeOf(nil, a.Driver, ""), true
	}
	pv := c.lookups.PersistentVolume(a.PVName)
	return migration.DetachVolumeOf(pv, a.Driver, ""), pv != nil
}

// ruleOfPair returns the rule of a pod's volume.
func (c *Controller) ruleOfPair(p *pair) *migration.DetachRule {
	return c.DetachRules().For(detachVolumeOfPair(p))
}

// detachVolumeOfPair is what policies select a pod's volume by.
func detachVolumeOfPair(p *pair) migration.DetachVolume {
	return migration.DetachVolumeOf(p.pv, p.d.Driver, p.d.InTreePlugin)
}

// noteDetachVolume keeps, for an attachment that cannot tell what policies select it by
// (an in-tree attachment learned from node status, a VolumeAttachment whose PersistentVolume
// is not cached), what the pod using it says, for the detach side to ask the same rule later.
func (c *Controller) noteDetachVolume(p *pair, a *actual.Attachment) {
	if _, classKnown := c.detachVolumeOfAttachment(a); classKnown {
		return
	}
	c.mem.NoteDetachVolume(a.Volume, detachVolumeOfPair(p))
}

// releasedByEvidence splits off the pairs whose volumes a policy's evidence frees from the
// pods of a node that is not Ready, as a deleted Node would: they are neither attached there
// nor kept, and reconcileDetach confirms the evidence on the fresh Node before detaching.
// Ready nodes (and the built-in rule) release nothing.
func (c *Controller) releasedByEvidence(node *v1.Node, pairs []*pair, now time.Time) (kept []*pair, released map[*pair]migration.DetachVerdict) {
	if migration.NotReadySince(node).IsZero() || c.DetachRules().Empty() {
		return pairs, nil
	}
	kept = pairs[:0:0]
	for _, p := range pairs {
		if v := c.ruleOfPair(p).Verdict(node, now); v.ReleasesPods {
			if released == nil {
				released = map[*pair]migration.DetachVerdict{}
			}
			released[p] = v
			continue
		}
		kept = append(kept, p)
	}
	return kept, released
}
