package demo

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	csitrans "k8s.io/csi-translation-lib"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// printTable prints the decision for every pair the controller knows.
func printTable(out io.Writer, snap []readmodel.PairState) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOD\tVOLUME\tPLUGIN\tDRIVER\tMECHANISM\tPHASE\tREASON")
	counts := map[migration.Mechanism]int{}
	for _, s := range snap {
		if !strings.HasPrefix(s.Pod, Namespace+"/") {
			continue
		}
		counts[s.Mechanism]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Node, strings.TrimPrefix(s.Pod, Namespace+"/"), s.Volume,
			dash(s.Plugin), dash(s.Driver), s.Mechanism, s.Phase, shorten(s.Reason, 90))
	}
	_ = tw.Flush()
	var parts []string
	for _, m := range migration.Mechanisms {
		parts = append(parts, fmt.Sprintf("%s=%d", m, counts[m]))
	}
	fmt.Fprintf(out, "mechanisms: %s\n", strings.Join(parts, " "))
}

// printSummary prints, per in-tree plugin, the controller's mode and how many managed nodes
// are migrated, not migrated, or have not reported.
func printSummary(out io.Writer, ctrl *adc.Controller) {
	cfg := ctrl.Config()
	nodes := ctrl.ManagedNodes()
	trans := csitrans.New()
	fmt.Fprintln(out, "\nrollout by plugin:")
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PLUGIN\tMODE\tNODES MIGRATED\tNOT MIGRATED\tNOT REPORTED\t")
	plugins := append([]string(nil), migration.MigratablePlugins...)
	sort.Strings(plugins)
	for _, p := range plugins {
		driver, _ := trans.GetCSINameFromInTreeName(p)
		var mig, not, unknown int
		for _, n := range nodes {
			switch migration.NodePluginMigration(cfg.NodeSource, n, p, driver).State {
			case migration.NodeStateMigrated:
				mig++
			case migration.NodeStateNotMigrated:
				not++
			default:
				unknown++
			}
		}
		if cfg.Mode(p) != migration.ModeOn {
			// complete: CSI everywhere; off: in-tree everywhere. The nodes are not consulted.
			fmt.Fprintf(tw, "  %s\t%s\tnodes not consulted\t\t\t\n", p, cfg.Mode(p))
			continue
		}
		bar := fmt.Sprintf("[%s%s]", strings.Repeat("#", mig*10/max(len(nodes), 1)), strings.Repeat(".", 10-mig*10/max(len(nodes), 1)))
		fmt.Fprintf(tw, "  %s\t%s\t%s %d/%d\t%d\t%d\t\n", p, cfg.Mode(p), bar, mig, len(nodes), not, unknown)
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
