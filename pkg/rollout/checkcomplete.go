package rollout

import (
	"fmt"
	"io"
	"strings"

	"github.com/migration-aware/adc/pkg/migration"
)

// RenderCheckComplete writes the verdict of `adc status --check-complete` for one plugin: one
// line saying whether switching it to complete is safe now, then one line per blocker (nodes
// that have not reported it migrated, volumes that would change path), so the output of a
// failed gate says what to fix. Cluster data is flattened to one line per item.
func RenderCheckComplete(w io.Writer, p PluginRollout) error {
	var b strings.Builder
	rd := p.Readiness
	head := fmt.Sprintf("%s (mode %s): ", p.Plugin, p.Mode)
	switch {
	case rd.Ready && p.Mode == migration.ModeComplete:
		fmt.Fprintf(&b, "%salready complete and safe: all %d managed nodes report it migrated\n", head, p.NodesTotal)
	case rd.Ready:
		fmt.Fprintf(&b, "%ssafe to switch to complete: all %d managed nodes report it migrated and all %d of its volumes already go through CSI\n",
			head, p.NodesTotal, p.VolumesByPath.CSI)
	case p.Mode == migration.ModeComplete:
		fmt.Fprintf(&b, "%snot safe: the mode is complete but %d of %d managed nodes have not reported it migrated (version skew: their kubelets expect the in-tree plugin); upgrade or drain them, or set the mode back to on\n",
			head, len(rd.NodesNotMigrated), p.NodesTotal)
	default:
		fmt.Fprintf(&b, "%snot safe to switch to complete: %d of %d managed nodes have not reported it migrated and %d volumes would change path; migrate or drain these nodes first\n",
			head, len(rd.NodesNotMigrated), p.NodesTotal, len(rd.VolumesChangingPath))
	}
	for _, n := range rd.NodesNotMigrated {
		fmt.Fprintf(&b, "  node %s: %s\n", flat(n.Node), nodeBlockerHint(n.State))
	}
	for _, c := range rd.VolumesChangingPath {
		pv := ""
		if c.PV != "" {
			pv = " (pv " + flat(c.PV) + ")"
		}
		fmt.Fprintf(&b, "  volume %s %s%s on node %s: %s -> csi\n", flat(c.Pod), flat(c.Volume), pv, flat(c.Node), c.From)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the check-complete verdict: %w", err)
	}
	return nil
}

func nodeBlockerHint(state string) string {
	if state == migration.NodeStateUnknown.String() {
		return "unknown (no CSINode or CSINodeInfo yet: it has not reported)"
	}
	return state + " (its kubelet still uses the in-tree plugin)"
}
