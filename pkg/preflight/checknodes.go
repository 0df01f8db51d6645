package preflight

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/migration-aware/adc/pkg/migration"
)

// checkNodes runs the per-node checks of every step: driver registration, attach limits,
// kubelet versions, and whether each node reports the plugin migrated as the step needs.
func (w *world) checkNodes() {
	for _, s := range w.steps {
		for _, n := range w.managed {
			if s.To != migration.ModeOff {
				w.checkRegistration(n, s)
				w.checkAttachLimit(n, s)
			}
			w.checkKubelet(n, s)
			w.checkNodeState(n, s)
		}
	}
}

// csiVolumesAfter counts the plugin's pairs on the node that go through its CSI driver after
// the step (attached, not needing attach, or held only until the driver registers).
func (w *world) csiVolumesAfter(node string, s Step) int {
	n := 0
	for _, p := range w.pairsOn(node, s.Plugin) {
		switch {
		case p.after.Driver != s.Driver:
		case p.after.Mechanism == migration.MechanismCSI, p.after.Mechanism == migration.MechanismCSINoAttach,
			p.after.Mechanism == migration.MechanismWait && p.after.WaitCause == migration.WaitDriverRegistration:
			n++
		}
	}
	return n
}

// checkRegistration: a node that would use the driver after the step must list it in its
// CSINode; adc holds (and the external-attacher would refuse) every attach before that.
func (w *world) checkRegistration(n migration.NodeObjects, s Step) {
	if !w.usesDriverAfter(n, s) {
		return
	}
	reg := migration.NodeDriverRegistration(n, s.Driver)
	if reg.State == migration.DriverRegistered {
		return
	}
	f := Finding{Severity: Warns, Check: CheckDriverNotRegistered, Plugin: s.Plugin, Object: nodeObject(n), Node: n.Name,
		Fix: "run the node plugin of " + s.Driver + " (its DaemonSet) on node " + n.Name + " and wait until the kubelet lists " + s.Driver + " in CSINode " + n.Name + " spec.drivers"}
	vols := w.csiVolumesAfter(n.Name, s)
	if vols > 0 {
		f.Severity = Blocks
		f.Why = fmt.Sprintf("%s: CSI driver %s is not registered on the node, and after the step %s of %s on it would go through that driver; adc holds them (no attach) until the kubelet lists the driver, so their pods do not start",
			reg.Evidence, s.Driver, count(vols, "volume", "volumes"), s.Plugin)
	} else {
		f.Why = fmt.Sprintf("%s: CSI driver %s is not registered on the node; no volume of %s is on it now, but one scheduled there after the step would be held until the driver registers",
			reg.Evidence, s.Driver, s.Plugin)
	}
	w.add(f)
}

// checkAttachLimit: the node's CSINode allocatable.count for the driver against the
// VolumeAttachments the node would have after the step.
func (w *world) checkAttachLimit(n migration.NodeObjects, s Step) {
	entry := migration.CSINodeDriver(n.CSINode, s.Driver)
	if entry == nil || entry.Allocatable == nil || entry.Allocatable.Count == nil {
		return
	}
	limit := int(*entry.Allocatable.Count)
	names := map[string]bool{}
	for _, va := range w.vasOfNode[n.Name] {
		if va.Spec.Attacher == s.Driver {
			names[va.Name] = true
		}
	}
	already := len(names)
	for i := range w.pairs {
		p := &w.pairs[i]
		if p.node.Name != n.Name || p.after.Driver != s.Driver {
			continue
		}
		if p.after.Mechanism == migration.MechanismCSI || (p.after.Mechanism == migration.MechanismWait && p.after.WaitCause == migration.WaitDriverRegistration) {
			if va := migration.NamesOf(&p.after, n.Name).VolumeAttachment; va != "" {
				names[va] = true
			}
		}
	}
	if len(names) <= limit {
		return
	}
	w.add(Finding{Severity: Blocks, Check: CheckAttachLimit, Plugin: s.Plugin, Object: nodeObject(n), Node: n.Name,
		Why: fmt.Sprintf("after the step node %s would have %d volumes attached through %s (%d VolumeAttachments now, %d more once its pods' volumes of %s attach through CSI), over the %d its CSINode allows (spec.drivers[%s].allocatable.count); the driver refuses the attaches past the limit",
			n.Name, len(names), s.Driver, already, len(names)-already, s.Plugin, limit, s.Driver),
		Fix: fmt.Sprintf("move pods off node %s (drain it, or cordon and evict %d of its pods with volumes of %s) before the step", n.Name, len(names)-limit, s.Driver)})
}

// checkKubelet: whether the node's kubelet version can follow the step at all.
func (w *world) checkKubelet(n migration.NodeObjects, s Step) {
	if n.Node == nil {
		return
	}
	raw := n.Node.Status.NodeInfo.KubeletVersion
	support := KubeletSupportTable[s.Plugin]
	capability := Capability(s.Plugin, raw)
	migrated := migration.NodePluginMigration(w.now.NodeSource, n, s.Plugin, s.Driver).State == migration.NodeStateMigrated
	table := fmt.Sprintf("(%s: alpha in %s, on by default from %s, locked on from %s; %s)", support.FeatureGate, support.Alpha, support.OnByDefault, support.Locked, KubeletSupportSource)
	obj := Object{Kind: "Node", Name: n.Name}
	switch {
	case capability == KubeletVersionUnknown && raw != "" && s.To != migration.ModeOn:
		w.add(Finding{Severity: Warns, Check: CheckKubeletVersion, Plugin: s.Plugin, Object: obj, Node: n.Name,
			Why: fmt.Sprintf("node %s reports kubelet version %s, which adc cannot place in the table of kubelet releases that migrate %s %s", n.Name, strconv.Quote(raw), s.Plugin, table),
			Fix: "check by hand that the kubelet of node " + n.Name + " can follow the step"})
	case capability == KubeletCannotMigrate && s.To != migration.ModeOff && !migrated:
		f := Finding{Severity: Blocks, Check: CheckKubeletVersion, Plugin: s.Plugin, Object: obj, Node: n.Name,
			Why: fmt.Sprintf("the kubelet of node %s is %s, older than the first release that can migrate %s %s: it always uses the in-tree plugin", n.Name, raw, s.Plugin, table),
			Fix: fmt.Sprintf("drain node %s and upgrade its kubelet to %s or later (or %s with %s=true) before the step", n.Name, support.OnByDefault, support.Alpha, support.FeatureGate)}
		if s.To == migration.ModeOn {
			f.Severity = Warns
			f.Why += "; with on the node keeps its volumes in-tree, which needs an in-tree attacher (adc inside kube-controller-manager)"
		}
		w.add(f)
	case capability == KubeletAlwaysMigrates && s.To == migration.ModeOff && s.From != migration.ModeOff:
		w.add(Finding{Severity: Blocks, Check: CheckKubeletVersion, Plugin: s.Plugin, Object: obj, Node: n.Name,
			Why: fmt.Sprintf("the kubelet of node %s is %s, which always migrates %s %s: it cannot go back to the in-tree plugin, so with off adc would hold its volumes of %s as version skew", n.Name, raw, s.Plugin, table, s.Plugin),
			Fix: fmt.Sprintf("keep %s on or complete; going back needs kubelets older than %s on every node", s.Plugin, support.Locked)})
	}
}

// checkNodeState: with complete every node must report the plugin migrated (its kubelet
// would otherwise expect the in-tree plugin); with off none may (version skew).
func (w *world) checkNodeState(n migration.NodeObjects, s Step) {
	nm := migration.NodePluginMigration(w.now.NodeSource, n, s.Plugin, s.Driver)
	vols := len(w.pairsOn(n.Name, s.Plugin))
	on := fmt.Sprintf("%s of %s on it", count(vols, "volume", "volumes"), s.Plugin)
	switch {
	case s.To == migration.ModeComplete && nm.State != migration.NodeStateMigrated:
		why := fmt.Sprintf("node %s has not reported %s migrated (%s: %s), so its kubelet expects the in-tree plugin, but with complete adc sends every volume of %s through %s without asking the node; %s",
			n.Name, s.Plugin, nm.State, nm.Evidence, s.Plugin, s.Driver, on)
		fix := "drain node " + n.Name + ", then restart its kubelet migrating " + s.Plugin + " (see kubelet-version) and check that CSINode " + n.Name + " lists " + s.Plugin + " in its " + migration.MigratedPluginsAnnotation + " annotation"
		if nm.State == migration.NodeStateUnknown {
			fix = "find out why node " + n.Name + " has no CSINode (its kubelet writes one at start); once it reports " + s.Plugin + " migrated the step is safe for it"
		}
		if c := Capability(s.Plugin, kubeletVersionOf(n)); c == KubeletMigratesWithGate {
			fix += "; its kubelet " + kubeletVersionOf(n) + " migrates " + s.Plugin + " only with the feature gate " + KubeletSupportTable[s.Plugin].FeatureGate + "=true"
		}
		w.add(Finding{Severity: Blocks, Check: CheckNodeNotMigrated, Plugin: s.Plugin, Object: nodeObject(n), Node: n.Name, Why: why, Fix: fix})
	case s.To == migration.ModeOff && nm.State == migration.NodeStateMigrated:
		w.add(Finding{Severity: Blocks, Check: CheckNodeMigrated, Plugin: s.Plugin, Object: nodeObject(n), Node: n.Name,
			Why: fmt.Sprintf("node %s reports %s migrated (%s), so its kubelet expects %s; with off adc treats that as version skew and holds the node's volumes of %s (no attach); %s",
				n.Name, s.Plugin, nm.Evidence, s.Driver, s.Plugin, on),
			Fix: "drain node " + n.Name + " and roll its kubelet back to the in-tree plugin first (if its version allows, see kubelet-version), or keep " + s.Plugin + " on"})
	}
}

func kubeletVersionOf(n migration.NodeObjects) string {
	if n.Node == nil {
		return ""
	}
	return n.Node.Status.NodeInfo.KubeletVersion
}

// count renders "1 volume" or "3 volumes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// sortedKeys returns a set's members in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
