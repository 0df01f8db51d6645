package explain

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/rollout"
)

// DefaultMaxWaitForUnmount is the controller's default --max-wait-for-unmount (upstream's
// maxWaitForUnmountDuration).
const DefaultMaxWaitForUnmount = plan.DefaultMaxWaitForUnmount

// Options say how to explain.
type Options struct {
	// Config is the migration configuration of the controller (its --migration,
	// --node-migration-source and --driver-info-source).
	Config migration.Config
	// MaxWaitForUnmount is the controller's --max-wait-for-unmount; 0 means the default.
	MaxWaitForUnmount time.Duration
	// Controller is a running controller's rollout report (/api/v1/rollout), whose held
	// pairs, problems and recent operations the explanation adds; nil without one.
	Controller *rollout.Report
	// ControllerAddress names where Controller came from, for the report.
	ControllerAddress string
}

// NotExposed is what a running controller keeps in memory about a pair but does not expose
// through its snapshot or /dashboard/api/v1/rollout, so no explanation can show it yet.
var NotExposed = []string{
	"the phase of pairs that are not held (attaching, attached, detach-blocked): the rollout report lists held pairs only",
	"create expectations and ReadWriteOnce reservations (which node a volume is reserved for while its attach is in flight)",
	"detaching marks and pending node status writes",
}

// Build explains the target from a cluster read (Read) at time now. It is pure.
func Build(opts Options, t Target, cl plan.Cluster, now time.Time) Report {
	if opts.MaxWaitForUnmount <= 0 {
		opts.MaxWaitForUnmount = DefaultMaxWaitForUnmount
	}
	b := &builder{opts: opts, now: now, idx: migration.NewObjectIndex(cl.Objects), vas: map[string]*storagev1.VolumeAttachment{}, cl: cl}
	policies := make([]*detachv1alpha1.DetachPolicy, len(cl.DetachPolicies))
	for i := range cl.DetachPolicies {
		policies[i] = &cl.DetachPolicies[i]
	}
	b.rules = migration.CompileDetachPolicies(policies, opts.MaxWaitForUnmount)
	for i := range cl.VolumeAttachments {
		b.vas[cl.VolumeAttachments[i].Name] = &cl.VolumeAttachments[i]
	}
	r := Report{GeneratedAt: now, Target: t, Config: opts.Config.String(), MaxWaitForUnmount: opts.MaxWaitForUnmount.String(), Pods: []Pod{}}
	if c := opts.Controller; c != nil {
		r.Controller = &ControllerSource{Address: opts.ControllerAddress, Standby: c.Standby, Message: c.Message, NotExposed: NotExposed}
		r.Notes = append(r.Notes, configDrift(opts.Config, c)...)
	}
	switch t.Kind {
	case KindPod:
		if pod := findPod(cl.Pods, t.Namespace, t.Name); pod != nil {
			r.Pods = append(r.Pods, b.pod(pod))
		}
	case KindPV:
		pv := b.idx.PersistentVolume(t.Name)
		if pv == nil {
			break
		}
		for i := range cl.Pods {
			if usesPV(&cl.Pods[i], pv) {
				r.Pods = append(r.Pods, b.pod(&cl.Pods[i]))
			}
		}
		if len(r.Pods) == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("no pod uses PersistentVolume %q (claim %s)", pv.Name, claimOf(pv)))
		}
		r.Attachments = b.pvAttachments(pv)
	}
	return r
}

// builder carries the indexes of one explanation.
type builder struct {
	opts Options
	now  time.Time
	idx  *migration.ObjectIndex
	vas  map[string]*storagev1.VolumeAttachment
	cl   plan.Cluster
	// rules are the detach rules in force (DetachPolicies and the built-in rule).
	rules *migration.DetachPolicies
}

func (b *builder) pod(pod *v1.Pod) Pod {
	p := Pod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase), Active: migration.PodIsActive(pod), Volumes: []Volume{}}
	switch {
	case pod.Spec.NodeName == "":
		p.Inactive = "not scheduled to a node yet: nothing is attached for it until the scheduler places it"
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		p.Inactive = "terminated (phase " + string(pod.Status.Phase) + "): its volumes are detached once no other active pod on the node uses them"
	case !p.Active:
		p.Inactive = "deleted and no container runs: its volumes are detached once no other active pod on the node uses them"
	}
	if pod.Spec.NodeName == "" {
		return p
	}
	node := b.idx.NodeObjects(pod.Spec.NodeName)
	if node.Node != nil && !migration.IsManagedNode(node.Node) {
		p.Inactive = "node " + pod.Spec.NodeName + " is not managed by the attach/detach controller (no " + migration.ManagedAnnotation + "=true): its kubelet attaches the volumes itself, adc leaves them alone"
	}
	for _, dv := range migration.DecidePod(&b.opts.Config, &pod.ObjectMeta, pod.Spec.Volumes, node, b.idx) {
		p.Volumes = append(p.Volumes, b.volume(pod, p.Active, dv, node))
	}
	return p
}

func (b *builder) volume(pod *v1.Pod, active bool, dv migration.DecidedVolume, node migration.NodeObjects) Volume {
	d := dv.Decision
	v := Volume{Name: dv.Name, PV: dv.PVName, Plugin: d.Plugin, Driver: d.Driver, VolumeHandle: d.VolumeHandle,
		Mechanism: d.Mechanism, WaitCause: d.WaitCause, Reason: d.Reason, Notes: d.Notes, MultiAttach: d.MultiAttachAllowed,
		Names: migration.NamesOf(&d, node.Name), Elsewhere: []Attachment{}}
	if dv.ClaimName != "" {
		v.Claim = pod.Namespace + "/" + dv.ClaimName
	}
	v.DecidedBy = b.facts(dv, node)
	if !attachable(d) {
		v.Next = b.next(pod, active, &v)
		return v
	}
	if a := b.attachment(node.Name, node.Node, d, &v.Names, dv.PVName); a != nil {
		v.Here = a
	}
	for _, n := range b.cl.Objects.Nodes {
		if n.Name == node.Name {
			continue
		}
		names := namesOn(d, n.Name)
		if a := b.attachment(n.Name, &n, d, &names, dv.PVName); a != nil {
			v.Elsewhere = append(v.Elsewhere, *a)
		}
	}
	if m := b.opts.Controller; m != nil && !m.Standby {
		v.Controller = memoryOf(m, node.Name, pod.Namespace+"/"+pod.Name, dv.Name, v.Names)
	}
	v.Next = b.next(pod, active, &v)
	return v
}

// attachable says whether the decision's volume can be attached at all (so its attachments
// are worth looking up): it has CSI or in-tree names.
func attachable(d migration.Decision) bool {
	return d.Mechanism != migration.MechanismNotAttachable && d.Mechanism != migration.MechanismCSINoAttach && (d.Driver != "" || d.InTreeUniqueName != "" || d.UniqueName != "")
}

// attachment returns the volume's attachment to a node, or nil when the node neither has
// its VolumeAttachment nor lists it in status.
func (b *builder) attachment(nodeName string, node *v1.Node, d migration.Decision, names *migration.VolumeNames, pvName string) *Attachment {
	a := &Attachment{Node: nodeName, UsedBy: []string{}}
	if va := b.vas[names.VolumeAttachment]; va != nil {
		a.VolumeAttachment, a.Exists, a.Attached = va.Name, true, va.Status.Attached
		t := va.CreationTimestamp.Time
		a.Created = &t
		a.Deleting = va.DeletionTimestamp != nil
		if e := va.Status.AttachError; e != nil {
			a.AttachError = e.Message
			if !e.Time.IsZero() {
				et := e.Time.Time
				a.AttachErrorTime = &et
			}
		}
		if e := va.Status.DetachError; e != nil {
			a.DetachError = e.Message
		}
	}
	if node != nil {
		for _, av := range node.Status.VolumesAttached {
			if n := string(av.Name); n != "" && (n == names.CSIUnique || n == names.InTreeUnique) {
				a.ListedInStatus = true
			}
		}
		for _, u := range node.Status.VolumesInUse {
			if n := string(u); n != "" && (n == names.CSIUnique || n == names.InTreeUnique) {
				a.InUse = true
			}
		}
	}
	if !a.Exists && !a.ListedInStatus && !a.InUse {
		return nil
	}
	for i := range b.cl.Pods {
		p := &b.cl.Pods[i]
		if p.Spec.NodeName == nodeName && migration.PodIsActive(p) && usesVolume(p, pvName, d, b.idx) {
			a.UsedBy = append(a.UsedBy, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(a.UsedBy)
	if len(a.UsedBy) == 0 {
		rule := b.rules.For(migration.DetachVolumeOf(b.idx.PersistentVolume(pvName), d.Driver, d.InTreePlugin))
		a.Detach = b.detach(nodeName, node, a, rule)
	}
	return a
}

// detach says what stands between an attachment no active pod needs and its detach, as
// pkg/adc decides it: not while the kubelet reports it in use, unless the volume's detach rule
// (a DetachPolicy or the built-in rule, pkg/migration) forces it, or the node is deleted.
func (b *builder) detach(nodeName string, node *v1.Node, a *Attachment, rule *migration.DetachRule) *Detach {
	switch {
	case a.Deleting:
		why := "the detach is under way: the VolumeAttachment is being deleted and the external-attacher unpublishes the volume"
		if a.DetachError != "" {
			why += "; it reports: " + a.DetachError
		}
		return &Detach{Why: why}
	case node == nil:
		now := b.now
		return &Detach{ForcedAt: &now, Why: "node " + nodeName + " no longer exists: adc detaches what a managed node leaves behind at once (a node deleted before this controller saw it managed is left to its owner)"}
	}
	v := rule.Verdict(node, b.now)
	if v.Force {
		now := b.now
		return &Detach{ForcedAt: &now, Why: "node " + nodeName + ": " + v.Reason + ": adc detaches at once, even in use (rule " + v.Rule + ")"}
	}
	if !a.InUse {
		return &Detach{Why: "nothing blocks it: the kubelet no longer reports it in use, so adc removes it from node status and then detaches it at its next reconcile"}
	}
	d := &Detach{Blocked: "the kubelet of node " + nodeName + " reports it in use (status.volumesInUse): it has not unmounted it yet"}
	switch {
	case v.Held:
		d.Why = d.Blocked + "; node " + nodeName + ": " + v.Reason
	case !v.At.IsZero():
		at := v.At
		d.ForcedAt = &at
		d.Why = fmt.Sprintf("%s; node %s: %s (rule %s)", d.Blocked, nodeName, v.Reason, v.Rule)
	default:
		d.Why = d.Blocked + "; node " + nodeName + " is Ready, so adc waits for the kubelet (no forced detach while the node is healthy; the " + v1.TaintNodeOutOfService + " taint forces it)"
	}
	return d
}

// pvAttachments are the PersistentVolume's attachments on every node, for a pv target.
func (b *builder) pvAttachments(pv *v1.PersistentVolume) []Attachment {
	// The volume's names do not depend on the node but its VolumeAttachment's does: decide
	// it once with its plugin complete (no node asked) for its driver, handle and in-tree name.
	cfg := migration.DefaultConfig()
	if p := migration.Decide(&cfg, &migration.Input{PV: pv, NodeName: "-"}).InTreePlugin; p != "" {
		cfg = cfg.WithModes(map[string]migration.Mode{p: migration.ModeComplete})
	}
	d := migration.Decide(&cfg, &migration.Input{PV: pv, NodeName: "-"})
	out := []Attachment{}
	for i := range b.cl.Objects.Nodes {
		n := &b.cl.Objects.Nodes[i]
		names := namesOn(d, n.Name)
		if a := b.attachment(n.Name, n, d, &names, pv.Name); a != nil {
			out = append(out, *a)
		}
	}
	return out
}

func usesPV(pod *v1.Pod, pv *v1.PersistentVolume) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || pod.Namespace != ref.Namespace {
		return false
	}
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == ref.Name:
			return true
		case vol.Ephemeral != nil && pod.Name+"-"+vol.Name == ref.Name:
			return true
		}
	}
	return false
}

// usesVolume says whether pod uses the decided volume: its PersistentVolume, or an inline
// volume with the same names.
func usesVolume(pod *v1.Pod, pvName string, d migration.Decision, idx *migration.ObjectIndex) bool {
	if pvName != "" {
		if pv := idx.PersistentVolume(pvName); pv != nil {
			return usesPV(pod, pv)
		}
		return false
	}
	for _, dv := range migration.VolumesOf(&pod.ObjectMeta, pod.Spec.Volumes, idx) {
		if dv.Inline == nil {
			continue
		}
		other := migration.Decide(&migration.Config{}, &migration.Input{InlineVolume: dv.Inline, PodNamespace: pod.Namespace, NodeName: pod.Spec.NodeName})
		if other.VolumeKey != "" && other.VolumeKey == d.VolumeKey {
			return true
		}
	}
	return false
}

func claimOf(pv *v1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return "none"
	}
	return pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
}

// memoryOf picks what the controller's report says about one pair and its volume.
func memoryOf(r *rollout.Report, node, pod, volume string, names migration.VolumeNames) *Memory {
	m := &Memory{Problems: []rollout.Problem{}, Operations: []rollout.OperationRecord{}, UnderWay: []rollout.OperationRecord{}}
	for i := range r.Held {
		if h := r.Held[i]; h.Node == node && h.Pod == pod && h.Volume == volume {
			m.Held = &h
		}
	}
	for _, p := range r.Problems {
		if p.Node == node && p.Pod == pod && p.Volume == volume {
			m.Problems = append(m.Problems, p)
		}
	}
	ofVolume := func(op rollout.OperationRecord) bool {
		return op.Volume != "" && (op.Volume == names.CSIUnique || op.Volume == names.InTreeUnique || op.Volume == names.VolumeAttachment)
	}
	for _, op := range r.Operations {
		if ofVolume(op) {
			m.Operations = append(m.Operations, op)
		}
	}
	for _, op := range r.UnderWay {
		if ofVolume(op) {
			m.UnderWay = append(m.UnderWay, op)
		}
	}
	return m
}

// configDrift notes where the configuration the explanation decides with differs from the
// running controller's, so an operator passes the controller's flags.
func configDrift(cfg migration.Config, c *rollout.Report) []string {
	if c.Standby {
		return nil
	}
	var out []string
	for _, p := range c.Plugins {
		if m := cfg.Mode(p.Plugin); m != p.Mode {
			out = append(out, fmt.Sprintf("the controller runs %s=%s but this explanation decides with %s=%s: pass the controller's --migration", p.Plugin, p.Mode, p.Plugin, m))
		}
	}
	src := cfg.NodeSource
	if src == "" {
		src = migration.NodeSourceCSINode
	}
	if c.NodeSource != "" && c.NodeSource != src {
		out = append(out, fmt.Sprintf("the controller reads node migration state from %s but this explanation from %s: pass the controller's --node-migration-source", c.NodeSource, src))
	}
	return out
}

// namesOn returns the names of a decided volume on another node than the one it was decided
// for: its VolumeAttachment's name depends on the node.
func namesOn(d migration.Decision, node string) migration.VolumeNames {
	d.VolumeAttachmentName = ""
	return migration.NamesOf(&d, node)
}
