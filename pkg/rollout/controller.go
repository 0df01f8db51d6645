package rollout

import (
	"strings"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// ControllerView is the part of *adc.Controller a rollout report reads. It is an interface
// so tests (and the metrics collector's tests) can use a fixed snapshot, and so that this
// package reads the controller's state without importing it.
type ControllerView interface {
	// Snapshot returns every pair's current state.
	Snapshot() []readmodel.PairState
	// RecentOperations returns the last finished operations, newest first.
	RecentOperations() []readmodel.Operation
	// OperationsUnderWay returns the attaches and detaches requested and not ended yet.
	OperationsUnderWay() []readmodel.Operation
	// Config returns the migration configuration the controller decides with.
	Config() migration.Config
	// ManagedNodes returns the managed nodes with their migration objects.
	ManagedNodes() []migration.NodeObjects
	// RecentFlips returns the last nodes that reported a plugin migrated or no longer
	// migrated, newest first.
	RecentFlips() []readmodel.NodeFlip
	// OtherController returns what adc saw of another attach/detach controller.
	OtherController() readmodel.OtherController
}

// FromController builds the report of a running controller at time now.
func FromController(view ControllerView, now time.Time) Report {
	r := FromSnapshot(view.Config(), view.ManagedNodes(), view.Snapshot(), view.RecentOperations(), now)
	r.OtherController = otherControllerRecord(view.OtherController())
	for i, f := range view.RecentFlips() {
		if i == MaxFlips {
			break
		}
		r.RecentFlips = append(r.RecentFlips, FlipRecord{Time: f.Time, Node: f.Node, Plugin: f.Plugin, Migrated: f.Migrated})
	}
	for i, op := range view.OperationsUnderWay() {
		if i == MaxOperations {
			break
		}
		r.UnderWay = append(r.UnderWay, OperationRecord{Kind: string(op.Kind), Node: op.Node, Volume: op.Volume,
			Plugin: op.Plugin, Migrated: op.Migrated, Time: op.Started})
	}
	return r
}

// FromSnapshot builds a controller report from state the caller already read, so a caller
// that also needs the raw pairs (the metrics collector) reads the controller only once.
// ops may be nil.
func FromSnapshot(cfg migration.Config, nodes []migration.NodeObjects, pairs []readmodel.PairState, ops []readmodel.Operation, now time.Time) Report {
	r := newReport(SourceController, cfg, now)
	r.NodesManaged = len(nodes)
	var states nodeStates
	r.Plugins, states, r.Notes, r.Nodes = countNodes(cfg, nodes)
	facts := make([]pairFacts, 0, len(pairs))
	for i := range pairs {
		p := &pairs[i]
		if p.Pod == "" {
			continue // an attachment no pod needs is not a decision
		}
		r.VolumesByMechanism[p.Mechanism]++
		facts = append(facts, pairFacts{node: p.Node, pod: p.Pod, volume: p.Volume, pv: p.PV, plugin: p.Plugin,
			mechanism: p.Mechanism, held: p.Phase == readmodel.PhaseHeld})
		if p.Phase == readmodel.PhaseHeld {
			r.Held = append(r.Held, HeldPair{
				Node: p.Node, Pod: p.Pod, Volume: p.Volume, PV: p.PV, Plugin: p.Plugin,
				Mechanism: p.Mechanism, Reason: p.Reason, Retries: p.Retries,
				NextRetry: timePtr(p.NextRetry), Since: timePtr(p.Since),
			})
		}
		if kind, ok := problemKind(&cfg, states, p); ok {
			r.Problems = append(r.Problems, Problem{Kind: kind, Node: p.Node, Pod: p.Pod, Volume: p.Volume, Reason: p.Reason})
		}
	}
	tallyPlugins(r.Plugins, states, facts)
	countNodeVolumes(r.Nodes, facts)
	r.NodeLoss = nodeLossFromPairs(pairs)
	for i, op := range ops {
		if i == MaxOperations {
			break
		}
		r.Operations = append(r.Operations, OperationRecord{
			Kind: string(op.Kind), Node: op.Node, Volume: op.Volume, Plugin: op.Plugin, Migrated: op.Migrated,
			DurationSeconds: op.Duration.Seconds(), Error: op.Err, Time: op.Started.Add(op.Duration),
		})
	}
	return r
}

// problemKind classifies a pair as a problem: a multi-attach block, or version skew (an
// error decision for a plugin whose migration is off on a node that reports it migrated).
func problemKind(cfg *migration.Config, states nodeStates, p *readmodel.PairState) (ProblemKind, bool) {
	switch {
	case p.Phase == readmodel.PhaseMultiAttach:
		return ProblemMultiAttach, true
	case p.Mechanism == migration.MechanismError && isSkew(cfg, states, p.Node, p.Plugin, p.Reason):
		return ProblemVersionSkew, true
	}
	return "", false
}

// isSkew recognises version skew from the configuration and the node's state, falling back
// to the decision engine's wording when the node's objects are not at hand.
func isSkew(cfg *migration.Config, states nodeStates, node, plugin, reason string) bool {
	if migration.IsMigratablePlugin(plugin) && cfg.Mode(plugin) == migration.ModeOff && states.state(node, plugin) == migration.NodeStateMigrated {
		return true
	}
	return strings.HasPrefix(reason, "version skew")
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
