package migration

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
)

// Evidence is a kind of proof that a node no longer uses its volumes. The values label the
// forced-detach counter, the detach-latency histogram and the views, so they are part of the
// public contract.
type Evidence string

const (
	// EvidenceNodeDeleted: the Node object is gone; always enough.
	EvidenceNodeDeleted Evidence = "node-deleted"
	// EvidenceOutOfService: the node.kubernetes.io/out-of-service taint (KEP-2268).
	EvidenceOutOfService Evidence = "out-of-service"
	// EvidenceCloudShutdown: node.cloudprovider.kubernetes.io/shutdown, set by the cloud node
	// lifecycle controller on a node that is not Ready whose machine the provider reports off.
	EvidenceCloudShutdown Evidence = "cloud-shutdown"
	// EvidenceFenced: a fencing operator's taint or condition named in the policy.
	EvidenceFenced Evidence = "fenced"
	// EvidenceGracefulShutdown: the kubelet shut the node down gracefully (its Ready condition
	// says "node is shutting down") and its own status.volumesInUse no longer lists the
	// volume. The kubelet may exit before it clears volumesInUse (kubernetes/kubernetes
	// PR#139660), so the shutdown alone proves nothing: a volume it still lists waits for other
	// evidence or the timeout.
	EvidenceGracefulShutdown Evidence = "graceful-shutdown"
	// EvidenceTimeout: no evidence, but the node has not been Ready for the rule's timeout.
	EvidenceTimeout Evidence = "timeout"
	// EvidenceNotInUse: the kubelet does not report the volume in use; an ordinary detach.
	EvidenceNotInUse Evidence = "not-in-use"
)

// CloudShutdownTaint is the taint of k8s.io/cloud-provider's node lifecycle controller
// (api.TaintNodeShutdown), spelled out so pkg/migration does not import the cloud provider.
const CloudShutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// GracefulShutdownMessage is what the kubelet's node shutdown manager puts in the Ready
// condition's message while the node shuts down (pkg/kubelet/nodeshutdown).
const GracefulShutdownMessage = "node is shutting down"

// BuiltInRule names the rule that applies when no DetachPolicy selects a volume: upstream's.
const BuiltInRule = "built-in"

// DetachRule is a DetachPolicy as adc applies it, or the built-in rule.
type DetachRule struct {
	// Policy is the DetachPolicy's name, or BuiltInRule.
	Policy string
	// Accepts are the evidence kinds that force a detach, besides the node's deletion.
	Accepts []Evidence
	// FencingTaints and FencingConditions say what a fencing operator sets on a fenced node.
	FencingTaints     []string
	FencingConditions []detachv1alpha1.FencingCondition
	// Timeout forces a detach after the node has not been Ready this long; Never disables it.
	Timeout time.Duration
	Never   bool
}

// builtIn reports whether r is upstream's rule, which keeps upstream's two quirks: the
// out-of-service taint forces a detach even on a Ready node, and evidence never frees the
// volumes of pods still on the node (pod GC must delete them first).
func (r *DetachRule) builtIn() bool { return r.Policy == BuiltInRule }

// accepts reports whether the rule takes e as proof.
func (r *DetachRule) accepts(e Evidence) bool { return slices.Contains(r.Accepts, e) }

// DetachVolume is what a policy selects a volume by.
type DetachVolume struct {
	// StorageClass is the PersistentVolume's spec.storageClassName ("" for inline volumes).
	StorageClass string
	// Driver is the CSI driver (of a migrated in-tree volume too).
	Driver string
	// Plugin is the in-tree plugin of an in-tree or migrated volume.
	Plugin string
}

// DetachVolumeOf is what policies select an attached volume by: pv's class, the CSI driver
// and the in-tree plugin, learned from the PersistentVolume when plugin is not known (a
// VolumeAttachment of a migrated in-tree PV). pv may be nil (inline volumes, a deleted PV).
func DetachVolumeOf(pv *v1.PersistentVolume, driver, plugin string) DetachVolume {
	v := DetachVolume{Driver: driver, Plugin: plugin}
	if pv != nil {
		v.StorageClass = pv.Spec.StorageClassName
		if v.Plugin == "" {
			v.Plugin, _ = MigratedPluginOf(pv, false, driver)
		}
	}
	return v
}

// DetachPolicies are the valid DetachPolicy objects, compiled for lookups, and the verdict on
// every policy (valid or why not).
type DetachPolicies struct {
	builtIn  DetachRule
	def      *DetachRule
	byClass  map[string]*DetachRule
	byDriver map[string]*DetachRule
	byPlugin map[string]*DetachRule
	// Verdicts are, per policy name, "" for a valid policy or why it is ignored.
	Verdicts map[string]PolicyVerdict
}

// PolicyVerdict is adc's judgement of one DetachPolicy, for its status and an Event.
type PolicyVerdict struct {
	Valid bool
	// Reason is a CamelCase condition reason; Message says what to fix.
	Reason, Message string
	// Generation is the policy's metadata.generation judged.
	Generation int64
}

// Policy verdict reasons.
const (
	PolicyReasonValid    = "Valid"
	PolicyReasonInvalid  = "Invalid"
	PolicyReasonConflict = "Conflict"
)

// CompileDetachPolicies validates policies and indexes the valid ones; maxWait is the
// built-in rule's timeout (--max-wait-for-unmount). A policy whose selection overlaps an
// earlier one's (by name) on the same key, or a second default, is ignored as a conflict:
// which of two policies applies must never depend on list order.
func CompileDetachPolicies(policies []*detachv1alpha1.DetachPolicy, maxWait time.Duration) *DetachPolicies {
	p := &DetachPolicies{
		builtIn:  DetachRule{Policy: BuiltInRule, Accepts: []Evidence{EvidenceOutOfService}, Timeout: maxWait},
		byClass:  map[string]*DetachRule{},
		byDriver: map[string]*DetachRule{},
		byPlugin: map[string]*DetachRule{},
		Verdicts: map[string]PolicyVerdict{},
	}
	sorted := slices.Clone(policies)
	slices.SortFunc(sorted, func(a, b *detachv1alpha1.DetachPolicy) int { return strings.Compare(a.Name, b.Name) })
	for _, pol := range sorted {
		if pol == nil {
			continue
		}
		rule, err := compileRule(pol, maxWait)
		if err != nil {
			p.Verdicts[pol.Name] = PolicyVerdict{Reason: PolicyReasonInvalid, Message: err.Error(), Generation: pol.Generation}
			continue
		}
		if conflict := p.conflict(pol); conflict != "" {
			p.Verdicts[pol.Name] = PolicyVerdict{Reason: PolicyReasonConflict, Message: conflict, Generation: pol.Generation}
			continue
		}
		if pol.Spec.Default {
			p.def = rule
		}
		for _, k := range pol.Spec.Volumes.StorageClassNames {
			p.byClass[k] = rule
		}
		for _, k := range pol.Spec.Volumes.Drivers {
			p.byDriver[k] = rule
		}
		for _, k := range pol.Spec.Volumes.InTreePlugins {
			p.byPlugin[k] = rule
		}
		p.Verdicts[pol.Name] = PolicyVerdict{Valid: true, Reason: PolicyReasonValid, Message: rule.String(), Generation: pol.Generation}
	}
	return p
}

// conflict says which earlier policy already selects what pol selects, or "".
func (p *DetachPolicies) conflict(pol *detachv1alpha1.DetachPolicy) string {
	if pol.Spec.Default && p.def != nil {
		return fmt.Sprintf("policy %s is already the default; make only one policy the default", p.def.Policy)
	}
	for _, c := range []struct {
		what string
		keys []string
		m    map[string]*DetachRule
	}{
		{"StorageClass", pol.Spec.Volumes.StorageClassNames, p.byClass},
		{"CSI driver", pol.Spec.Volumes.Drivers, p.byDriver},
		{"in-tree plugin", pol.Spec.Volumes.InTreePlugins, p.byPlugin},
	} {
		for _, k := range c.keys {
			if other, ok := c.m[k]; ok {
				return fmt.Sprintf("%s %s is already selected by policy %s; a volume must have one policy, remove it from one of them", c.what, k, other.Policy)
			}
		}
	}
	return ""
}

// compileRule validates what the CRD schema cannot (or what a cluster without the schema's
// rules let through) and returns the rule.
func compileRule(pol *detachv1alpha1.DetachPolicy, maxWait time.Duration) (*DetachRule, error) {
	s := pol.Spec
	r := &DetachRule{Policy: pol.Name, Timeout: maxWait}
	sel := s.Volumes
	if !s.Default && len(sel.StorageClassNames)+len(sel.Drivers)+len(sel.InTreePlugins) == 0 {
		return nil, fmt.Errorf("the policy selects no volume: set spec.volumes (storageClassNames, drivers or inTreePlugins) or spec.default")
	}
	for _, e := range s.Evidence {
		switch e {
		case detachv1alpha1.EvidenceOutOfService:
			r.Accepts = append(r.Accepts, EvidenceOutOfService)
		case detachv1alpha1.EvidenceCloudShutdown:
			r.Accepts = append(r.Accepts, EvidenceCloudShutdown)
		case detachv1alpha1.EvidenceGracefulShutdown:
			r.Accepts = append(r.Accepts, EvidenceGracefulShutdown)
		case detachv1alpha1.EvidenceFencing:
			if s.Fencing == nil || len(s.Fencing.Taints)+len(s.Fencing.Conditions) == 0 {
				return nil, fmt.Errorf("evidence Fencing needs spec.fencing.taints or spec.fencing.conditions")
			}
			r.Accepts = append(r.Accepts, EvidenceFenced)
		default:
			return nil, fmt.Errorf("unknown evidence %q: use OutOfService, CloudShutdown, Fencing or GracefulShutdown", e)
		}
	}
	if s.Fencing != nil {
		r.FencingTaints = slices.Clone(s.Fencing.Taints)
		for _, c := range s.Fencing.Conditions {
			if c.Type == "" {
				return nil, fmt.Errorf("spec.fencing.conditions: a condition needs a type")
			}
			if c.Status == "" {
				c.Status = string(v1.ConditionTrue)
			}
			r.FencingConditions = append(r.FencingConditions, c)
		}
	}
	switch t := s.Timeout; {
	case t == "":
	case t == detachv1alpha1.TimeoutNever:
		r.Never = true
	default:
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("spec.timeout %q is neither a positive duration (\"2m\") nor %q", t, detachv1alpha1.TimeoutNever)
		}
		r.Timeout = d
	}
	return r, nil
}

// For returns the rule of a volume: the policy selecting its StorageClass, else its CSI
// driver, else its in-tree plugin, else the default policy, else the built-in rule.
func (p *DetachPolicies) For(v DetachVolume) *DetachRule {
	if p == nil {
		return nil
	}
	if r, ok := p.byClass[v.StorageClass]; ok && v.StorageClass != "" {
		return r
	}
	if r, ok := p.byDriver[v.Driver]; ok && v.Driver != "" {
		return r
	}
	if r, ok := p.byPlugin[v.Plugin]; ok && v.Plugin != "" {
		return r
	}
	if p.def != nil {
		return p.def
	}
	return &p.builtIn
}

// UnknownClassRule is the rule name of an attached volume whose StorageClass adc cannot
// learn (its PersistentVolume is gone, or it was learned from node status after a restart)
// while some DetachPolicy selects by StorageClass: adc cannot tell which rule is the
// volume's, so it forces nothing (ForUnknownClass).
const UnknownClassRule = "unknown-class"

// ForUnknownClass returns the rule of an attached volume whose StorageClass is not known:
// For(v) when no policy selects by class (the class could not change the answer), else a
// rule that forces no detach (no evidence but the node's deletion, no timeout): the volume
// may be of a class whose policy keeps it attached, and adc does not detach what it is
// unsure of.
func (p *DetachPolicies) ForUnknownClass(v DetachVolume) *DetachRule {
	if p == nil {
		return nil
	}
	if len(p.byClass) == 0 {
		return p.For(v)
	}
	return &DetachRule{Policy: UnknownClassRule, Never: true}
}

// InTreePluginDriver is the CSI driver an in-tree plugin migrates to ("" when it has none):
// what a policy selecting by driver knows an in-tree attachment by.
func InTreePluginDriver(plugin string) string {
	driver, err := translator.GetCSINameFromInTreeName(plugin)
	if err != nil {
		return ""
	}
	return driver
}

// Empty reports whether no valid policy exists, so the built-in rule applies everywhere.
func (p *DetachPolicies) Empty() bool {
	return p == nil || (p.def == nil && len(p.byClass)+len(p.byDriver)+len(p.byPlugin) == 0)
}

// String describes the rule in one line, for status messages and views.
func (r *DetachRule) String() string {
	var acc []string
	for _, e := range r.Accepts {
		acc = append(acc, string(e))
	}
	timeout := "timeout " + r.Timeout.String()
	if r.Never {
		timeout = "no timeout"
	}
	if len(acc) == 0 {
		return "accepts node deletion only; " + timeout
	}
	return "accepts " + strings.Join(acc, ", ") + " and node deletion; " + timeout
}

// DetachVerdict is what a rule says about a volume the kubelet of a node still reports in use.
type DetachVerdict struct {
	// Rule is the policy that decided (BuiltInRule for upstream's rule).
	Rule string
	// Force: the volume may be detached now although the kubelet reports it in use.
	Force bool
	// Evidence is the proof that forces the detach, or the timeout.
	Evidence Evidence
	// Reason says why in a sentence; for a volume not forced, why it is kept.
	Reason string
	// At is when the timeout will force the detach (zero when none will).
	At time.Time
	// Held: the policy keeps the volume attached until evidence comes (timeout Never).
	Held bool
	// ReleasesPods: the evidence frees the volume even from pods still on the node, as a
	// deleted Node would. Only a DetachPolicy's non-timeout evidence does, on a node that is
	// not Ready; the built-in rule waits for the pods to go (pod GC), as upstream does.
	ReleasesPods bool
}

// Wait is how long until the timeout forces the detach (0 when none will or it has).
func (v DetachVerdict) Wait(now time.Time) time.Duration {
	if v.At.IsZero() || !v.At.After(now) {
		return 0
	}
	return v.At.Sub(now)
}

// Verdict decides whether a volume the node's kubelet reports in use may be detached anyway.
// No DetachPolicy forces anything on a Ready node: a kubelet that is up and reports the
// volume in use is using it, whatever a taint says.
func (r *DetachRule) Verdict(node *v1.Node, now time.Time) DetachVerdict {
	v := DetachVerdict{Rule: r.Policy}
	ready := readyCondition(node)
	if r.builtIn() && hasTaint(node, v1.TaintNodeOutOfService) {
		v.Force, v.Evidence, v.Reason = true, EvidenceOutOfService, "the node has the "+v1.TaintNodeOutOfService+" taint"
		return v
	}
	if ready == nil {
		v.Reason = "the node has no Ready condition yet"
		return v
	}
	if ready.Status == v1.ConditionTrue {
		v.Reason = "the node is Ready and its kubelet reports the volume in use"
		return v
	}
	if e, why := r.evidence(node, ready); e != "" {
		v.Force, v.Evidence, v.Reason = true, e, why
		v.ReleasesPods = !r.builtIn()
		return v
	}
	since := ready.LastTransitionTime.Time
	graceful := ""
	if r.accepts(EvidenceGracefulShutdown) && GracefulShutdown(node) {
		// What the kubelet writes during a graceful shutdown (Ready=False "node is shutting
		// down", its pods Failed with reason Terminated) does not prove the unmount; only its
		// volumesInUse does, and the kubelet may exit before clearing it (PR#139660).
		graceful = "; the kubelet shut the node down gracefully but still lists the volume in volumesInUse, which is no proof that it unmounted"
	}
	if r.Never {
		v.Held = true
		v.Reason = fmt.Sprintf("policy %s holds it: the node has not been Ready since %s and the policy has no timeout; it is detached once %s%s",
			r.Policy, since.UTC().Format(time.RFC3339), r.waitingFor(), graceful)
		return v
	}
	v.At = since.Add(r.Timeout)
	if !now.Before(v.At) {
		// The message names the transition time, not the elapsed time, so that every
		// reconcile of the same outage words it the same way and one Event is emitted.
		v.Force, v.Evidence = true, EvidenceTimeout
		v.Reason = fmt.Sprintf("the node has not been Ready since %s, longer than %s", since.UTC().Format(time.RFC3339), r.timeoutName())
		return v
	}
	v.Reason = fmt.Sprintf("the node has not been Ready since %s; %s forces the detach at %s unless %s first%s",
		since.UTC().Format(time.RFC3339), r.timeoutName(), v.At.UTC().Format(time.RFC3339), r.waitingFor(), graceful)
	return v
}

// timeoutName names the rule's timeout in messages; the built-in one is the flag.
func (r *DetachRule) timeoutName() string {
	if r.builtIn() {
		return fmt.Sprintf("max-wait-for-unmount (%s)", r.Timeout)
	}
	return fmt.Sprintf("the timeout of policy %s (%s)", r.Policy, r.Timeout)
}

// waitingFor says what evidence would detach the volume, for messages.
func (r *DetachRule) waitingFor() string {
	var what []string
	for _, e := range r.Accepts {
		switch e {
		case EvidenceOutOfService:
			what = append(what, "the "+v1.TaintNodeOutOfService+" taint")
		case EvidenceCloudShutdown:
			what = append(what, "the cloud reports the machine shut down ("+CloudShutdownTaint+")")
		case EvidenceFenced:
			what = append(what, "a fencing operator marks the node ("+strings.Join(r.fencingNames(), ", ")+")")
		case EvidenceGracefulShutdown:
			what = append(what, "the kubelet stops reporting it in use")
		}
	}
	what = append(what, "the Node is deleted")
	return strings.Join(what, ", or ")
}

func (r *DetachRule) fencingNames() []string {
	names := slices.Clone(r.FencingTaints)
	for _, c := range r.FencingConditions {
		names = append(names, "condition "+c.Type+"="+c.Status)
	}
	return names
}

// evidence returns the first accepted evidence the not-Ready node shows, and its sentence.
func (r *DetachRule) evidence(node *v1.Node, ready *v1.NodeCondition) (Evidence, string) {
	if r.accepts(EvidenceOutOfService) && hasTaint(node, v1.TaintNodeOutOfService) {
		return EvidenceOutOfService, "the node is not Ready and has the " + v1.TaintNodeOutOfService + " taint"
	}
	if r.accepts(EvidenceCloudShutdown) && hasTaint(node, CloudShutdownTaint) {
		return EvidenceCloudShutdown, "the cloud provider reports the node's machine shut down (" + CloudShutdownTaint + ")"
	}
	if r.accepts(EvidenceFenced) {
		for _, k := range r.FencingTaints {
			if hasTaint(node, k) {
				return EvidenceFenced, "the node is not Ready and fenced (taint " + k + ", policy " + r.Policy + ")"
			}
		}
		for _, fc := range r.FencingConditions {
			for _, c := range node.Status.Conditions {
				if string(c.Type) == fc.Type && string(c.Status) == fc.Status {
					return EvidenceFenced, "the node is not Ready and fenced (condition " + fc.Type + "=" + fc.Status + ", policy " + r.Policy + ")"
				}
			}
		}
	}
	return "", ""
}

// GracefulShutdown reports whether the node's kubelet said it was shutting down gracefully.
func GracefulShutdown(node *v1.Node) bool {
	c := readyCondition(node)
	return c != nil && c.Status != v1.ConditionTrue && strings.Contains(c.Message, GracefulShutdownMessage)
}

// NotReadySince returns when the node left Ready, or zero when it is Ready or has no Ready
// condition.
func NotReadySince(node *v1.Node) time.Time {
	c := readyCondition(node)
	if c == nil || c.Status == v1.ConditionTrue {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

func readyCondition(node *v1.Node) *v1.NodeCondition {
	if node == nil {
		return nil
	}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(node *v1.Node, key string) bool {
	if node == nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
