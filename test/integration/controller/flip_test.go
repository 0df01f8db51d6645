package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// A node that flips gce-pd between in-tree and CSI while a volume is attached keeps the
// attachment it has (kubernetes#98687): no detach, no attach of the other kind, the volume
// stays listed under the name it was attached with; the new mechanism applies to the next
// attach only.
func TestMigrationFlip(t *testing.T) {
	t.Run("in-tree to csi", func(t *testing.T) {
		e := newEnv(t)
		att := e.newRecordingAttacher()
		e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{gceDriver}})
		ctrl := e.startController(adc.Options{InTreeAttacher: att})
		node := e.node("n1", true)
		e.csiNode(node, "", gceDriver)
		pd := e.ns + "-disk"
		e.pod("app", node, []string{e.boundClaim(e.gcePV("pd", pd, "us-central1-a"))})
		inTree := gcePlugin + "/" + pd
		csi := csiUnique(gceDriver, gceHandle("us-central1-a", pd))
		e.eventually("attached in-tree and listed", 10*time.Second, e.listedWithDevicePath(node, inTree, devicePathOf(inTree)))

		e.csiNode(node, gcePlugin, gceDriver)
		e.pairIs(ctrl.Controller, node, "app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSI && s.Phase == readmodel.PhaseAttached && s.UniqueName == inTree &&
				strings.Contains(s.Reason, "stays attached")
		})
		e.consistently("in-tree attachment kept after the node migrated", time.Second, func() (bool, string) {
			if n := len(att.callsOf("detach", node)); n != 0 {
				return false, "in-tree Detach called: " + att.String()
			}
			if n := len(att.callsOf("attach", node)); n != 1 {
				return false, fmt.Sprintf("Attach called %d times: %s", n, att)
			}
			if vas := e.vasOnNode(node); len(vas) != 0 {
				return false, "VolumeAttachment " + vas[0].Name + " created for a volume already attached in-tree"
			}
			if ok, msg := e.listedWithDevicePath(node, inTree, devicePathOf(inTree))(); !ok {
				return false, msg
			}
			return e.notListedOnNode(node, csi)()
		})

		// The attachment is removed by the mechanism that made it.
		e.deletePod("app")
		e.eventually("in-tree Detach after the pod is gone", 10*time.Second, func() (bool, string) {
			return len(att.callsOf("detach", node)) == 1, att.String()
		})
		e.eventually("removed from node status", 5*time.Second, e.notListedOnNode(node, inTree))
	})

	t.Run("in-tree then node state unknown", func(t *testing.T) {
		e := newEnv(t)
		att := e.newRecordingAttacher()
		ctrl := e.startController(adc.Options{InTreeAttacher: att})
		node := e.node("n1", true)
		e.csiNode(node, "", gceDriver)
		pd := e.ns + "-disk"
		e.pod("app", node, []string{e.boundClaim(e.gcePV("pd", pd, "us-central1-a"))})
		inTree := gcePlugin + "/" + pd
		e.eventually("attached in-tree and listed", 10*time.Second, e.listedWithDevicePath(node, inTree, devicePathOf(inTree)))

		if err := e.client.StorageV1().CSINodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.pairIs(ctrl.Controller, node, "app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismWait && s.Phase == readmodel.PhaseHeld && strings.Contains(s.Reason, "existing attachment")
		})
		e.consistently("held pair's in-tree attachment kept", time.Second, func() (bool, string) {
			if n := len(att.callsOf("detach", node)); n != 0 {
				return false, "in-tree Detach called for a held pair: " + att.String()
			}
			if vas := e.vasOnNode(node); len(vas) != 0 {
				return false, "VolumeAttachment " + vas[0].Name + " created for a held pair"
			}
			return e.listedWithDevicePath(node, inTree, devicePathOf(inTree))()
		})
	})

	t.Run("csi to in-tree", func(t *testing.T) {
		e := newEnv(t)
		att := e.newRecordingAttacher()
		e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{gceDriver}})
		ctrl := e.startController(adc.Options{InTreeAttacher: att})
		node := e.node("n1", true)
		e.csiNode(node, gcePlugin, gceDriver)
		pd := e.ns + "-disk"
		e.pod("app", node, []string{e.boundClaim(e.gcePV("pd", pd, "us-central1-a"))})
		inTree := gcePlugin + "/" + pd
		handle := gceHandle("us-central1-a", pd)
		csi, name := csiUnique(gceDriver, handle), vaName(handle, gceDriver, node)
		e.eventually("attached through CSI and listed", 10*time.Second, e.listedOnNode(node, csi))
		uid := e.vaUIDs(name)[name]

		e.csiNode(node, "", gceDriver)
		e.pairIs(ctrl.Controller, node, "app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismInTree && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == name &&
				strings.Contains(s.Reason, "stays attached")
		})
		e.consistently("CSI attachment kept after the node went back to in-tree", time.Second, func() (bool, string) {
			if calls := att.String(); calls != "[]" {
				return false, "in-tree attacher called: " + calls
			}
			if got := e.vaUIDs(name)[name]; got != uid {
				return false, fmt.Sprintf("VolumeAttachment %s removed or replaced (uid %q, was %q)", name, got, uid)
			}
			if ok, msg := e.listedOnNode(node, csi)(); !ok {
				return false, msg
			}
			return e.notListedOnNode(node, inTree)()
		})

		e.deletePod("app")
		e.eventually("VolumeAttachment deleted after the pod is gone", 10*time.Second, e.vaGone(name))
		e.eventually("removed from node status", 5*time.Second, e.notListedOnNode(node, csi))
		if s := att.String(); s != "[]" {
			t.Errorf("in-tree attacher called for a CSI attachment: %s", s)
		}
	})
}
