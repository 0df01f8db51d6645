package preflight

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// world is a cluster read, indexed once for every check, with every active pod volume on a
// managed node decided twice: under the configuration now and under the one after the step.
type world struct {
	cl      Cluster
	now     migration.Config
	after   migration.Config
	steps   []Step
	stepOf  map[string]Step
	idx     *migration.ObjectIndex
	managed []migration.NodeObjects
	pairs   []pair
	// vas are the VolumeAttachments by name and by node.
	vas       map[string]*storagev1.VolumeAttachment
	vasOfNode map[string][]*storagev1.VolumeAttachment
	// listed are, per node, the unique names its status.volumesAttached lists.
	listed map[string]map[string]bool
	// untranslatable marks the PVs ("pv/<name>") and inline volumes ("pod/<ns>/<name>/<vol>")
	// an untranslatable finding names, so held-after-step does not repeat it.
	untranslatable map[string]bool
	findings       []Finding
}

// pair is one volume of one active pod on a managed node.
type pair struct {
	pod  *v1.Pod
	vol  migration.PodVolume
	node migration.NodeObjects
	// now and after are the decisions before and after the step.
	now, after migration.Decision
	// plugin is the in-tree plugin of the volume when it is one that moves, else "".
	plugin string
}

func newWorld(steps []Step, cfg migration.Config, cl Cluster) *world {
	w := &world{cl: cl, now: cfg, steps: steps, stepOf: map[string]Step{}, idx: migration.NewObjectIndex(cl.Objects),
		vas: map[string]*storagev1.VolumeAttachment{}, vasOfNode: map[string][]*storagev1.VolumeAttachment{},
		listed: map[string]map[string]bool{}, untranslatable: map[string]bool{}}
	modes := map[string]migration.Mode{}
	for _, s := range steps {
		w.stepOf[s.Plugin] = s
		modes[s.Plugin] = s.To
	}
	w.after = cfg.WithModes(modes)
	for i := range cl.Objects.Nodes {
		n := &cl.Objects.Nodes[i]
		if !migration.IsManagedNode(n) {
			continue
		}
		w.managed = append(w.managed, w.idx.NodeObjects(n.Name))
		names := map[string]bool{}
		for _, av := range n.Status.VolumesAttached {
			names[string(av.Name)] = true
		}
		w.listed[n.Name] = names
	}
	sort.Slice(w.managed, func(i, j int) bool { return w.managed[i].Name < w.managed[j].Name })
	for i := range cl.VolumeAttachments {
		va := &cl.VolumeAttachments[i]
		w.vas[va.Name] = va
		w.vasOfNode[va.Spec.NodeName] = append(w.vasOfNode[va.Spec.NodeName], va)
	}
	for i := range cl.Pods {
		pod := &cl.Pods[i]
		if !migration.PodIsActive(pod) || w.listed[pod.Spec.NodeName] == nil {
			continue // unscheduled, terminated, or on a node adc does not manage
		}
		node := w.idx.NodeObjects(pod.Spec.NodeName)
		for _, dv := range migration.DecidePod(&w.now, &pod.ObjectMeta, pod.Spec.Volumes, node, w.idx) {
			p := pair{pod: pod, vol: dv.PodVolume, node: node, now: dv.Decision}
			p.after = migration.DecidePodVolume(&w.after, dv.PodVolume, pod.Namespace, node, w.idx)
			for _, plugin := range []string{p.now.InTreePlugin, p.after.InTreePlugin} {
				if _, ok := w.stepOf[plugin]; ok && plugin != "" {
					p.plugin = plugin
				}
			}
			w.pairs = append(w.pairs, p)
		}
	}
	return w
}

// add records a finding.
func (w *world) add(f Finding) { w.findings = append(w.findings, f) }

// pairsOn returns the pairs of plugin on node.
func (w *world) pairsOn(node, plugin string) []*pair {
	var out []*pair
	for i := range w.pairs {
		if p := &w.pairs[i]; p.node.Name == node && p.plugin == plugin {
			out = append(out, p)
		}
	}
	return out
}

// usesDriverAfter reports whether the node would send the plugin's volumes through its CSI
// driver after the step: always with complete, when it reports the plugin migrated with on.
func (w *world) usesDriverAfter(node migration.NodeObjects, s Step) bool {
	switch s.To {
	case migration.ModeComplete:
		return true
	case migration.ModeOn:
		return migration.NodePluginMigration(w.after.NodeSource, node, s.Plugin, s.Driver).State == migration.NodeStateMigrated
	}
	return false
}

// attachedPath says how the pair's volume is attached to its node now: "csi" (its
// VolumeAttachment exists, or node status lists its CSI name), "in-tree" (node status lists
// its in-tree name), or "" (not attached).
func (w *world) attachedPath(p *pair) string {
	d := p.now
	if d.Mechanism == migration.MechanismError && d.Driver == "" {
		d = p.after
	}
	names := migration.NamesOf(&d, p.node.Name)
	listed := w.listed[p.node.Name]
	switch {
	case names.VolumeAttachment != "" && w.vas[names.VolumeAttachment] != nil:
		return "csi"
	case names.CSIUnique != "" && listed[names.CSIUnique]:
		return "csi"
	case names.InTreeUnique != "" && listed[names.InTreeUnique]:
		return "in-tree"
	}
	return ""
}

// path names where a decision sends a volume, in the words of attachedPath.
func path(d migration.Decision) string {
	switch d.Mechanism {
	case migration.MechanismCSI, migration.MechanismCSINoAttach:
		return "csi"
	case migration.MechanismInTree:
		return "in-tree"
	case migration.MechanismNotAttachable:
		return "none"
	}
	return "held"
}

// objectOfPair names a pair's volume: its PersistentVolume, or the pod's inline volume.
func objectOfPair(p *pair) Object {
	if p.vol.PV != nil {
		return Object{Kind: "PersistentVolume", Name: p.vol.PV.Name}
	}
	return Object{Kind: "Pod", Namespace: p.pod.Namespace, Name: p.pod.Name, Volume: p.vol.Name}
}

// key names a pair's volume for the untranslatable set.
func (p *pair) key() string {
	if p.vol.PV != nil {
		return "pv/" + p.vol.PV.Name
	}
	return "pod/" + p.pod.Namespace + "/" + p.pod.Name + "/" + p.vol.Name
}

// nodeObject names a node's CSINode when it has one, else the Node.
func nodeObject(n migration.NodeObjects) Object {
	if n.CSINode != nil {
		return Object{Kind: "CSINode", Name: n.Name}
	}
	return Object{Kind: "Node", Name: n.Name}
}
