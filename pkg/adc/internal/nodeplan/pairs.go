package nodeplan

import (
	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/migration"
)

// PairStep is what the reconcile does for one desired pair.
type PairStep string

const (
	// Keep: the volume is attached (or attaching, or being detached) on the node already,
	// whatever mechanism made the attachment; nothing is attached or detached.
	Keep PairStep = "keep"
	// KeepHeld: Keep, and the pair is held (wait or error): retried with backoff.
	KeepHeld PairStep = "keep-held"
	// Shared: an earlier pair of the node attaches the same volume in this reconcile (two
	// pods, or two PersistentVolumes of one disk): it shares that attach's outcome.
	Shared PairStep = "shared"
	// Hold: nothing is attached; the pair is retried with backoff.
	Hold PairStep = "hold"
	// HoldNoInTreeAttacher: an in-tree attach this adc cannot make (no in-tree attacher).
	HoldNoInTreeAttacher PairStep = "hold-no-in-tree-attacher"
	// NotNeeded: the volume needs no attach (not attachable, or its CSI driver needs none).
	NotNeeded PairStep = "not-needed"
	// AttachCSI: create the VolumeAttachment, once the ReadWriteOnce rule allows it.
	AttachCSI PairStep = "attach-csi"
	// AttachInTree: attach with the in-tree attacher, once the ReadWriteOnce rule allows it.
	AttachInTree PairStep = "attach-in-tree"
	// Unknown: a mechanism the plan does not know; a bug, reported as held.
	Unknown PairStep = "unknown"
)

// Pair is one volume of one active pod on the node, as the plan reads it.
type Pair struct {
	Decision *migration.Decision
	ID       actual.Identity
	// Attachment is the node's existing attachment of the volume (actual.Index.Find), nil
	// when it has none.
	Attachment *actual.Attachment
}

// PairPlan is the step of one pair; SharedWith is the index of the pair whose attach a
// Shared pair shares.
type PairPlan struct {
	Step       PairStep
	SharedWith int
}

// PlanPairs plans the node's desired pairs, in order. A volume (its unique name) is attached
// once per node: the first pair that attaches it decides, the others share its outcome. A
// mechanism flip never detaches: an existing attachment is kept, the new mechanism applies
// to the next attach (kubernetes#98687).
func PlanPairs(pairs []Pair, inTreeAttacher bool) []PairPlan {
	out := make([]PairPlan, len(pairs))
	attaching := map[string]int{}
	for i, p := range pairs {
		held := p.Decision.Mechanism == migration.MechanismWait || p.Decision.Mechanism == migration.MechanismError
		switch {
		case p.Attachment != nil && held:
			out[i].Step = KeepHeld
			continue
		case p.Attachment != nil:
			out[i].Step = Keep
			continue
		}
		if first, ok := attaching[p.ID.Volume]; ok && p.ID.Volume != "" {
			out[i] = PairPlan{Step: Shared, SharedWith: first}
			continue
		}
		switch p.Decision.Mechanism {
		case migration.MechanismWait, migration.MechanismError:
			out[i].Step = Hold
		case migration.MechanismNotAttachable, migration.MechanismCSINoAttach:
			out[i].Step = NotNeeded
		case migration.MechanismCSI:
			out[i].Step = AttachCSI
		case migration.MechanismInTree:
			if !inTreeAttacher {
				out[i].Step = HoldNoInTreeAttacher
				continue
			}
			out[i].Step = AttachInTree
		default:
			out[i].Step = Unknown
		}
		if out[i].Step == AttachCSI || out[i].Step == AttachInTree {
			attaching[p.ID.Volume] = i
		}
	}
	return out
}
