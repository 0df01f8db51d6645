package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// A node's kubelet reports gce-pd migrated, then rolls back, then migrates again: the
// controller records each flip (newest first) from the CSINode updates; the first report and
// other nodes' reports are not flips.
func TestNodeFlipsFromCSINodeUpdates(t *testing.T) {
	e := newEnv(t)
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	other := e.node("n2", true)
	e.csiNode(node, "", gceDriver)
	e.csiNode(other, gcePlugin, gceDriver)

	flipsOf := func(n string) []readmodel.NodeFlip {
		var out []readmodel.NodeFlip
		for _, f := range ctrl.RecentFlips() {
			if f.Node == n {
				out = append(out, f)
			}
		}
		return out
	}
	// The first reports are no flips; wait until the controller has seen them.
	e.eventually("both nodes reconciled", 10*time.Second, func() (bool, string) {
		managed := 0
		for _, n := range ctrl.ManagedNodes() {
			if (n.Name == node || n.Name == other) && n.CSINode != nil {
				managed++
			}
		}
		return managed == 2, fmt.Sprintf("%d of 2", managed)
	})
	e.consistently("no flip from first reports", 500*time.Millisecond, func() (bool, string) {
		return len(flipsOf(node))+len(flipsOf(other)) == 0, fmt.Sprint(ctrl.RecentFlips())
	})

	for i, migrated := range []bool{true, false, true} {
		value := ""
		if migrated {
			value = gcePlugin
		}
		e.csiNode(node, value, gceDriver)
		e.eventually(fmt.Sprintf("flip %d (migrated=%v) recorded", i+1, migrated), 10*time.Second, func() (bool, string) {
			got := flipsOf(node)
			return len(got) == i+1 && got[0].Plugin == gcePlugin && got[0].Migrated == migrated, fmt.Sprint(got)
		})
	}
	if got := flipsOf(other); len(got) != 0 {
		t.Errorf("the other node flipped: %v", got)
	}
}
