package metrics

import (
	"sort"

	k8smetrics "k8s.io/component-base/metrics"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// upstreamCollector computes attachdetach_controller_total_volumes at scrape time. It is a
// collector of its own so that a host that registered upstream's copy keeps it without
// costing adc its rollout metrics.
type upstreamCollector struct {
	k8smetrics.BaseStableCollector
	source       *viewSource
	totalVolumes *k8smetrics.Desc
}

func newUpstreamCollector(s *viewSource) *upstreamCollector {
	return &upstreamCollector{
		source: s,
		totalVolumes: k8smetrics.NewDesc(TotalVolumesName, "Number of volumes in A/D Controller",
			[]string{"plugin_name", "state"}, nil, k8smetrics.ALPHA, ""),
	}
}

// DescribeWithStability implements k8smetrics.StableCollector.
func (c *upstreamCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) {
	ch <- c.totalVolumes
}

// CollectWithStability counts volumes per plugin in the desired state of world (pairs of
// active pods that need an attach, held ones included) and the actual state of world
// (volumes attached, including those being detached), each volume once per node.
func (c *upstreamCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
	view, ok := c.source.view()
	if !ok {
		return
	}
	pairs := view.Snapshot()
	type volumeOnNode struct{ node, volume string }
	counts := map[string]*[2]int{}
	seen := [2]map[volumeOnNode]bool{{}, {}}
	add := func(state int, p *readmodel.PairState) {
		key := volumeOnNode{p.Node, volumeID(p)}
		if seen[state][key] {
			return
		}
		seen[state][key] = true
		label := PluginLabel(p)
		if counts[label] == nil {
			counts[label] = &[2]int{}
		}
		counts[label][state]++
	}
	for i := range pairs {
		p := &pairs[i]
		if p.Pod != "" && needsAttach(p.Mechanism) {
			add(0, p)
		}
		switch p.Phase {
		case readmodel.PhaseAttached, readmodel.PhaseDetaching, readmodel.PhaseDetachBlocked:
			if p.Mechanism != migration.MechanismCSINoAttach && p.Mechanism != migration.MechanismNotAttachable {
				add(1, p)
			}
		}
	}
	labels := make([]string, 0, len(counts))
	for l := range counts {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		ch <- k8smetrics.NewLazyConstMetric(c.totalVolumes, k8smetrics.GaugeValue, float64(counts[l][0]), l, StateDesired)
		ch <- k8smetrics.NewLazyConstMetric(c.totalVolumes, k8smetrics.GaugeValue, float64(counts[l][1]), l, StateActual)
	}
}

// needsAttach reports whether a decision puts the pair in the desired state of world:
// everything but volumes that have no attach phase.
func needsAttach(m migration.Mechanism) bool {
	return m != migration.MechanismNotAttachable && m != migration.MechanismCSINoAttach
}

// volumeID identifies a pair's volume on its node: the attachment's unique name, else the
// PV, else the pod volume (unresolved claims are counted once per pod volume).
func volumeID(p *readmodel.PairState) string {
	switch {
	case p.UniqueName != "":
		return p.UniqueName
	case p.VolumeAttachment != "":
		return "va:" + p.VolumeAttachment
	case p.PV != "":
		return "pv:" + p.PV
	}
	return "pod:" + p.Pod + "/" + p.Volume
}
