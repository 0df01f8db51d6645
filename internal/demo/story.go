package demo

import (
	"sort"
	"strings"

	csitrans "k8s.io/csi-translation-lib"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// The story, exported read-only for the demo on real parts (test/e2e/demo), so both demos
// seed the same mid-rollout cluster and hold the same expectations.

// StoryNode is one node of the story and what its kubelet reports.
type StoryNode struct {
	// Name is the node name.
	Name string
	// MigratedPlugins is the CSINode's migrated-plugins annotation in the story ("" lists none).
	MigratedPlugins string
	// Late: the node reports its CSINode only after the controller started.
	Late bool
	// Drivers are the CSI drivers the story's kubelet registers on it.
	Drivers []string
}

// Migrated says whether the story's node reports plugin migrated.
func (n StoryNode) Migrated(plugin string) bool {
	for _, p := range strings.Split(n.MigratedPlugins, ",") {
		if strings.TrimSpace(p) == plugin {
			return true
		}
	}
	return false
}

// StoryNodes returns the story's nodes.
func StoryNodes() []StoryNode {
	out := make([]StoryNode, 0, len(nodes))
	for _, n := range nodes {
		sn := StoryNode{Name: n.name, MigratedPlugins: n.migrated, Drivers: append([]string(nil), n.drivers...)}
		if n.migrated == "-" {
			sn.Late, sn.MigratedPlugins = true, ""
		}
		out = append(out, sn)
	}
	return out
}

// StoryPod is one workload pod of the story and how adc should end up treating its volume.
type StoryPod struct {
	// Name and Node place the pod (namespace Namespace).
	Name, Node string
	// Volume says what the pod mounts, for output, e.g. "gce-pd PV pv-web-0".
	Volume string
	// InTreePlugin is the volume's in-tree plugin, empty for a CSI or non-attachable volume.
	InTreePlugin string
	// Zone is the topology.kubernetes.io/zone label of the pod's PersistentVolume, empty for
	// a volume without one; the pod's node must be in that zone.
	Zone string
	// Driver is the CSI driver the volume goes through when it goes through CSI (the
	// migration target of InTreePlugin), empty for a non-attachable volume.
	Driver string
	// Want is the expected final mechanism and phase; WantAlt an accepted alternative (the
	// ReadWriteOnce volume two pods want: whichever comes second waits).
	Want, WantAlt Expectation
}

// Expectation is a mechanism and phase adc should end up with for a pod's volume.
type Expectation struct {
	Mechanism migration.Mechanism
	Phase     readmodel.Phase
}

// StoryPods returns the story's workload pods, in seeding order.
func StoryPods() []StoryPod {
	trans := csitrans.New()
	out := make([]StoryPod, 0, len(workloads))
	for _, w := range workloads {
		p := StoryPod{Name: w.pod, Node: w.node, Driver: w.driver,
			Want: w.want, WantAlt: w.wantAlt}
		switch w.kind {
		case gcePD, inlineGCE:
			p.InTreePlugin = "kubernetes.io/gce-pd"
		case awsEBS:
			p.InTreePlugin = "kubernetes.io/aws-ebs"
		case portworx:
			p.InTreePlugin = "kubernetes.io/portworx-volume"
		}
		if p.InTreePlugin != "" {
			p.Driver, _ = trans.GetCSINameFromInTreeName(p.InTreePlugin)
		}
		p.Zone = zoneOf(w.kind)
		switch w.kind {
		case inlineGCE:
			p.Volume = "inline gce-pd " + w.claim
		case configMap:
			p.Volume = "configMap settings"
		case nativeCSI:
			p.Volume = "CSI PV pv-" + w.claim
		default:
			p.Volume = strings.TrimPrefix(p.InTreePlugin, "kubernetes.io/") + " PV pv-" + w.claim
		}
		out = append(out, p)
	}
	return out
}

// StoryDrivers returns every CSI driver the story's volumes and nodes use, sorted, and the
// subset whose CSIDriver says attachRequired: false.
func StoryDrivers() (all, noAttach []string) {
	seen := map[string]bool{}
	for _, p := range StoryPods() {
		seen[p.Driver] = p.Driver != ""
	}
	for _, n := range nodes {
		for _, d := range n.drivers {
			seen[d] = true
		}
	}
	for d, ok := range seen {
		if ok {
			all = append(all, d)
		}
	}
	sort.Strings(all)
	return all, append([]string(nil), noAttachDrivers...)
}

// MigrationFlag returns Migration() as the value of adc controller's --migration flag: the
// modes that differ from the default.
func MigrationFlag() string {
	cfg, def := Migration(), migration.DefaultConfig()
	var parts []string
	for p, m := range cfg.Modes {
		if def.Mode(p) != m {
			parts = append(parts, p+"="+m.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
