package rollout

import (
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// NodeLossVolume is plan's row: a volume of a node that is not Ready and what its detach rule
// will do with it.
type NodeLossVolume = plan.NodeLossVolume

// nodeLossFromPairs lists the controller's pairs and attachments on nodes that are not Ready.
func nodeLossFromPairs(pairs []readmodel.PairState) []NodeLossVolume {
	out := []NodeLossVolume{}
	for i := range pairs {
		p := &pairs[i]
		if p.Detach == nil {
			continue
		}
		n := plan.NodeLossOf(p.Detach)
		n.Node, n.Pod, n.Volume, n.PV = p.Node, p.Pod, p.Volume, p.PV
		if p.PV == "" {
			n.UniqueName = p.UniqueName
		}
		out = append(out, n)
	}
	plan.SortNodeLoss(out)
	return out
}
