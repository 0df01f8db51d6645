package metrics

import (
	"sort"

	k8smetrics "k8s.io/component-base/metrics"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

// heldMechanisms are the mechanisms a held pair can have; the held metrics always carry all
// three, zeros included, so queries need no absent() guards.
var heldMechanisms = []migration.Mechanism{migration.MechanismWait, migration.MechanismError, migration.MechanismInTree}

// rolloutCollector computes the adc_* rollout metrics at scrape time from the same report
// the dashboard shows.
type rolloutCollector struct {
	k8smetrics.BaseStableCollector
	source *viewSource

	nodes, mode, decisions, held, heldAge, heldRetries, multiAttach, skew *k8smetrics.Desc
	volumes, ready, blockers, heldByPolicy                                *k8smetrics.Desc
}

// Blocker kinds, the kind label values of CompleteBlockersName.
const (
	BlockerNodes   = "nodes"
	BlockerVolumes = "volumes"
)

func newRolloutCollector(s *viewSource) *rolloutCollector {
	desc := func(name, help string, labels ...string) *k8smetrics.Desc {
		return k8smetrics.NewDesc(name, help, labels, nil, k8smetrics.ALPHA, "")
	}
	return &rolloutCollector{
		source: s,
		nodes: desc(NodesName, "Number of managed nodes per in-tree plugin by what the node reports: migrated, not-migrated or unknown (not reported yet).",
			"plugin", "state"),
		mode:      desc(ModeName, "The migration mode adc applies to each in-tree plugin (1 for the configured mode).", "plugin", "mode"),
		decisions: desc(DecisionsName, "Number of (pod volume, node) pairs per plugin and attach mechanism.", "plugin", "mechanism"),
		held:      desc(HeldPairsName, "Number of pairs held (not attached, never detached) per mechanism: wait, error, or in-tree without an in-tree attacher.", "mechanism"),
		heldAge:   desc(HeldOldestAgeName, "Age in seconds of the oldest held pair per mechanism; 0 when none is held.", "mechanism"),
		heldRetries: desc(HeldRetriesName, "Sum of the backoff retries of the held pairs per mechanism.",
			"mechanism"),
		multiAttach: desc(MultiAttachName, "Number of pairs waiting because their ReadWriteOnce volume is still attached to another node."),
		skew:        desc(VersionSkewName, "Number of pairs held because a node reports a plugin migrated while adc has its migration off."),
		volumes: desc(VolumesByPathName, "Number of (pod volume, node) pairs of each in-tree plugin by path: csi (through the CSI driver), in-tree, or held.",
			"plugin", "path"),
		ready: desc(CompleteReadyName, "1 when switching the in-tree plugin to complete is safe now (every managed node reports it migrated, no volume would change path), else 0; for a complete plugin, 0 means kubelets lag (skew).",
			"plugin"),
		heldByPolicy: desc(DetachHeldByPolicyName, "Number of volumes of nodes that are not Ready that a DetachPolicy keeps attached (no timeout, no accepted evidence yet), per policy.",
			"policy"),
		blockers: desc(CompleteBlockersName, "What blocks switching the in-tree plugin to complete: managed nodes not reporting it migrated (kind nodes), volumes that would change path (kind volumes).",
			"plugin", "kind"),
	}
}

// DescribeWithStability implements k8smetrics.StableCollector.
func (c *rolloutCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) {
	for _, d := range []*k8smetrics.Desc{c.nodes, c.mode, c.decisions, c.held, c.heldAge, c.heldRetries, c.multiAttach, c.skew, c.volumes, c.ready, c.blockers, c.heldByPolicy} {
		ch <- d
	}
}

// CollectWithStability reads the controller once and emits every rollout metric.
func (c *rolloutCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
	view, ok := c.source.view()
	if !ok {
		return
	}
	now := c.source.clock()
	cfg, nodes, pairs := view.Config(), view.ManagedNodes(), view.Snapshot()
	r := rollout.FromSnapshot(cfg, nodes, pairs, nil, now)
	gauge := func(d *k8smetrics.Desc, v float64, labels ...string) {
		ch <- k8smetrics.NewLazyConstMetric(d, k8smetrics.GaugeValue, v, labels...)
	}

	for _, p := range r.Plugins {
		gauge(c.nodes, float64(p.NodesMigrated), p.Plugin, migration.NodeStateMigrated.String())
		gauge(c.nodes, float64(p.NodesNotMigrated), p.Plugin, migration.NodeStateNotMigrated.String())
		gauge(c.nodes, float64(p.NodesUnknown), p.Plugin, migration.NodeStateUnknown.String())
		gauge(c.mode, 1, p.Plugin, string(p.Mode))
		for _, path := range rollout.Paths {
			gauge(c.volumes, float64(p.VolumesByPath.Count(path)), p.Plugin, string(path))
		}
		ready := 0.0
		if p.Readiness.Ready {
			ready = 1
		}
		gauge(c.ready, ready, p.Plugin)
		gauge(c.blockers, float64(len(p.Readiness.NodesNotMigrated)), p.Plugin, BlockerNodes)
		gauge(c.blockers, float64(len(p.Readiness.VolumesChangingPath)), p.Plugin, BlockerVolumes)
	}

	type pluginMech struct{ plugin, mech string }
	decisions := map[pluginMech]int{}
	for i := range pairs {
		if pairs[i].Pod == "" {
			continue
		}
		decisions[pluginMech{PluginLabel(&pairs[i]), string(pairs[i].Mechanism)}]++
	}
	keys := make([]pluginMech, 0, len(decisions))
	for k := range decisions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].plugin != keys[j].plugin {
			return keys[i].plugin < keys[j].plugin
		}
		return keys[i].mech < keys[j].mech
	})
	for _, k := range keys {
		gauge(c.decisions, float64(decisions[k]), k.plugin, k.mech)
	}

	count, retries, oldest := map[migration.Mechanism]int{}, map[migration.Mechanism]int{}, map[migration.Mechanism]float64{}
	for _, h := range r.Held {
		count[h.Mechanism]++
		retries[h.Mechanism] += h.Retries
		if h.Since != nil {
			if age := now.Sub(*h.Since).Seconds(); age > oldest[h.Mechanism] {
				oldest[h.Mechanism] = age
			}
		}
	}
	for _, m := range heldMechanisms {
		gauge(c.held, float64(count[m]), string(m))
		gauge(c.heldAge, oldest[m], string(m))
		gauge(c.heldRetries, float64(retries[m]), string(m))
	}

	var multi, skew int
	for _, p := range r.Problems {
		switch p.Kind {
		case rollout.ProblemMultiAttach:
			multi++
		case rollout.ProblemVersionSkew:
			skew++
		}
	}
	gauge(c.multiAttach, float64(multi))
	gauge(c.skew, float64(skew))

	held := map[string]int{}
	for _, n := range r.NodeLoss {
		if n.Held {
			held[n.Rule]++
		}
	}
	policies := make([]string, 0, len(held))
	for p := range held {
		policies = append(policies, p)
	}
	sort.Strings(policies)
	for _, p := range policies {
		gauge(c.heldByPolicy, float64(held[p]), p)
	}
}
