package preflight

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// Zone and region labels of in-tree volumes (the GA ones and their beta predecessors).
var placementLabels = []string{v1.LabelTopologyZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion}

// zonalPlugins are the migratable plugins whose volumes live in one zone, so a volume
// without a zone loses the placement the scheduler needs.
var zonalPlugins = map[string]bool{"kubernetes.io/gce-pd": true, "kubernetes.io/aws-ebs": true, "kubernetes.io/azure-disk": true, "kubernetes.io/cinder": true}

// checkVolumes translates every PersistentVolume of a plugin that moves towards CSI and every
// inline volume of one in a running pod, and reports translations that fail or lose
// placement.
func (w *world) checkVolumes() {
	for _, s := range w.steps {
		if s.To == migration.ModeOff {
			continue
		}
		for i := range w.cl.Objects.PVs {
			if pv := &w.cl.Objects.PVs[i]; pluginOfPV(pv) == s.Plugin {
				w.checkPV(pv, s)
			}
		}
		for i := range w.pairs {
			if p := &w.pairs[i]; p.plugin == s.Plugin && p.vol.Inline != nil {
				if _, err := translateInline(p.vol.Inline, p.pod.Namespace); err != nil {
					w.untranslatable[p.key()] = true
					w.add(Finding{Severity: Blocks, Check: CheckUntranslatable, Plugin: s.Plugin, Object: objectOfPair(p), Node: p.node.Name,
						Why: fmt.Sprintf("csi-translation-lib cannot translate inline volume %q of pod %s/%s: %v; once it goes through %s adc holds it with an error decision and the pod does not start", p.vol.Name, p.pod.Namespace, p.pod.Name, err, s.Driver),
						Fix: "fix the pod's volume source, or move the data to a PersistentVolume that translates"})
				}
			}
		}
	}
}

func (w *world) checkPV(pv *v1.PersistentVolume, s Step) {
	obj := Object{Kind: "PersistentVolume", Name: pv.Name}
	out, err := translatePV(pv)
	if err != nil {
		w.untranslatable["pv/"+pv.Name] = true
		w.add(Finding{Severity: Blocks, Check: CheckUntranslatable, Plugin: s.Plugin, Object: obj,
			Why: fmt.Sprintf("csi-translation-lib cannot translate PersistentVolume %q: %v; every pod using it would be held by adc (error decision) once it goes through %s, and neither the external-attacher nor the kubelet could use it", pv.Name, err, s.Driver),
			Fix: "fix the PersistentVolume (its volume source, or a malformed zone label) so that it translates"})
		return
	}
	hadPlacement := hasPlacement(pv)
	switch {
	case hadPlacement && affinityOf(out) == nil:
		w.add(Finding{Severity: Blocks, Check: CheckPlacement, Plugin: s.Plugin, Object: obj,
			Why: fmt.Sprintf("PersistentVolume %q is placed (zone labels or node affinity) but its translation to %s has no node affinity: the scheduler could place its pods on nodes that cannot reach the volume", pv.Name, s.Driver),
			Fix: "give the PersistentVolume spec.nodeAffinity on the zone, or re-create it as a CSI PersistentVolume of " + s.Driver + " with the driver's topology"})
		return
	case !hadPlacement && zonalPlugins[s.Plugin]:
		why := fmt.Sprintf("PersistentVolume %q of the zonal plugin %s has no zone label and no node affinity, so its translation to %s carries no zone either: pods using it may be scheduled to another zone than the disk's", pv.Name, s.Plugin, s.Driver)
		if out.Spec.CSI != nil && strings.Contains(out.Spec.CSI.VolumeHandle, "/zones/UNSPECIFIED/") {
			why += fmt.Sprintf(", and the driver is handed %q, a volume handle without its zone", out.Spec.CSI.VolumeHandle)
		}
		w.add(Finding{Severity: Warns, Check: CheckPlacement, Plugin: s.Plugin, Object: obj, Why: why,
			Fix: "label the PersistentVolume with its zone (" + v1.LabelTopologyZone + "=<zone>) before the step"})
	}
	// Nodes that would mount it through the driver after the step must match its translated
	// node affinity: the kubelet refuses the mount otherwise.
	required := affinityOf(out)
	if required == nil {
		return
	}
	for i := range w.pairs {
		p := &w.pairs[i]
		if p.vol.PV == nil || p.vol.PV.Name != pv.Name || p.node.Node == nil || !w.usesDriverAfter(p.node, s) {
			continue
		}
		if matchesNodeSelector(required, p.node.Node) {
			continue
		}
		w.add(Finding{Severity: Blocks, Check: CheckPlacement, Plugin: s.Plugin, Object: obj, Node: p.node.Name,
			Why: fmt.Sprintf("translated to %s, PersistentVolume %q requires nodes matching %s, which node %s (running pod %s/%s that uses it) does not: the kubelet refuses to mount it there (volume node affinity conflict)",
				s.Driver, pv.Name, describeSelector(required), p.node.Name, p.pod.Namespace, p.pod.Name),
			Fix: fmt.Sprintf("run the node plugin of %s on node %s so that it reports its topology (the kubelet copies it to the Node's labels), or label the node with %s", s.Driver, p.node.Name, describeSelector(required))})
	}
}

// hasPlacement reports whether an in-tree PersistentVolume says where it lives.
func hasPlacement(pv *v1.PersistentVolume) bool {
	for _, l := range placementLabels {
		if pv.Labels[l] != "" {
			return true
		}
	}
	return affinityOf(pv) != nil
}

// affinityOf returns the PersistentVolume's required node selector, or nil.
func affinityOf(pv *v1.PersistentVolume) *v1.NodeSelector {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
		return nil
	}
	return pv.Spec.NodeAffinity.Required
}

// checkPaths reports the attached volumes whose next attach would go another way after the
// step, and, going back, the nodes to drain first; then the pairs the step would newly hold
// for a reason no other finding names.
func (w *world) checkPaths() {
	drained := map[string]bool{}
	for i := range w.pairs {
		p := &w.pairs[i]
		s, ok := w.stepOf[p.plugin]
		if !ok || p.plugin == "" {
			continue
		}
		attached := w.attachedPath(p)
		next := path(p.after)
		if attached != "" && attached != next {
			w.pathChange(p, s, attached, next, drained)
		}
		w.heldAfter(p, s, attached)
	}
}

func (w *world) pathChange(p *pair, s Step, attached, next string, drained map[string]bool) {
	what := fmt.Sprintf("%s (pod %s/%s, volume %q) is attached to node %s %s", objectOfPair(p), p.pod.Namespace, p.pod.Name, p.vol.Name, p.node.Name, pathWords(attached))
	f := Finding{Severity: Warns, Check: CheckPathChange, Plugin: p.plugin, Object: objectOfPair(p), Node: p.node.Name}
	if next == "held" {
		held := string(p.after.Mechanism)
		if p.after.WaitCause != "" {
			held += ", " + string(p.after.WaitCause)
		}
		f.Why = what + "; after the step adc would hold it (" + held + "; adc explain says why), keeping the attachment but attaching it nowhere else"
	} else {
		f.Why = what + "; after the step its next attach goes " + pathWords(next) + " (adc keeps the existing attachment while the pod runs, no detach and re-attach on a flip)"
	}
	f.Fix = "nothing before the step; the pod's next start uses the new path"
	if s.backward() {
		f.Severity = Blocks
		f.Why += "; going back, the node's kubelet must switch mode too, and a kubelet switching mode with the volume mounted cannot unmount it cleanly"
		f.Fix = "drain node " + p.node.Name + " before the step (see the drain finding)"
		if key := p.plugin + "/" + p.node.Name; !drained[key] {
			drained[key] = true
			w.add(Finding{Severity: Blocks, Check: CheckDrain, Plugin: p.plugin, Object: Object{Kind: "Node", Name: p.node.Name}, Node: p.node.Name,
				Why: fmt.Sprintf("node %s has volumes of %s attached %s that would change path going %s -> %s; a node must be drained before its kubelet switches migration mode (kubernetes/community#3072)",
					p.node.Name, p.plugin, pathWords(attached), s.From, s.To),
				Fix: "kubectl drain " + p.node.Name + " --ignore-daemonsets, wait until adc has detached its volumes of " + p.plugin + ", switch its kubelet, then uncordon it"})
		}
	}
	w.add(f)
}

// heldAfter reports a pair held after the step (wait or error) that is not held now, unless
// another finding names the cause: driver registration, an untranslatable volume, a node
// reporting the plugin migrated under off.
func (w *world) heldAfter(p *pair, s Step, attached string) {
	held := func(d migration.Decision) bool {
		return d.Mechanism == migration.MechanismWait || d.Mechanism == migration.MechanismError
	}
	if !held(p.after) || held(p.now) {
		return
	}
	switch {
	case p.after.WaitCause == migration.WaitDriverRegistration, w.untranslatable[p.key()]:
		return
	case s.To == migration.ModeOff && migration.NodePluginMigration(w.now.NodeSource, p.node, s.Plugin, s.Driver).State == migration.NodeStateMigrated:
		return
	}
	f := Finding{Severity: Blocks, Check: CheckHeldAfterStep, Plugin: p.plugin, Object: objectOfPair(p), Node: p.node.Name,
		Why: fmt.Sprintf("after the step adc would hold %s (pod %s/%s, volume %q) on node %s, which is %s now: %s", objectOfPair(p), p.pod.Namespace, p.pod.Name, p.vol.Name, p.node.Name, p.now.Mechanism, p.after.Reason),
		Fix: "fix what the reason names before the step"}
	if attached != "" {
		f.Severity = Warns
		f.Why += " (its existing attachment is kept)"
	}
	w.add(f)
}

// pathWords says a path in a sentence.
func pathWords(path string) string {
	switch path {
	case "csi":
		return "through CSI"
	case "none":
		return "nowhere (nothing to attach)"
	}
	return path
}
