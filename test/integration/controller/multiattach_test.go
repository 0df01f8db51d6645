package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// A ReadWriteOnce volume attached to node A is not attached to node B while A has it: the
// pod on B is in multi-attach with exactly one FailedAttachVolume Event; once the pod on A is
// gone (and the volume not in use there), A's VolumeAttachment is deleted and then B's is
// created.
func TestRWOMultiAttach(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("rwo")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{})
	nodeA, nodeB := e.node("a", true), e.node("b", true)
	claim := e.boundClaim(e.csiPV("vol", driver, "h-rwo", v1.ReadWriteOnce))
	e.pod("pod-a", nodeA, []string{claim})
	vaA, vaB := vaName("h-rwo", driver, nodeA), vaName("h-rwo", driver, nodeB)
	unique := csiUnique(driver, "h-rwo")
	e.eventually("attached on node A", 10*time.Second, e.listedOnNode(nodeA, unique))

	e.pod("pod-b", nodeB, []string{claim})
	e.pairIs(ctrl.Controller, nodeB, "pod-b", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
		return s.Phase == readmodel.PhaseMultiAttach && strings.Contains(s.Reason, nodeA)
	})
	msg := e.oneWarningEvent(e.ns, "pod-b", adc.ReasonFailedAttach, 500*time.Millisecond)
	if !strings.Contains(msg, "Multi-Attach") {
		t.Errorf("FailedAttachVolume message %q does not say Multi-Attach", msg)
	}
	if ok, m := e.vaGone(vaB)(); !ok {
		t.Fatalf("ReadWriteOnce volume attached to a second node: %s", m)
	}

	e.deletePod("pod-a")
	e.eventually("VolumeAttachment created on node B", 10*time.Second, e.vaExists(vaB))
	if ok, m := e.vaGone(vaA)(); !ok {
		t.Fatalf("node B's VolumeAttachment exists while node A's still does: %s", m)
	}
	e.eventually("listed on node B", 10*time.Second, e.listedOnNode(nodeB, unique))
	e.eventually("no longer listed on node A", 5*time.Second, e.notListedOnNode(nodeA, unique))
	if n, msgs := e.warningEvents(e.ns, "pod-b", adc.ReasonFailedAttach); n != 1 {
		t.Errorf("%d FailedAttachVolume Events on pod-b, want exactly 1: %q", n, msgs)
	}
}

// A ReadWriteMany volume attaches to two nodes at once, with no Multi-Attach Event.
func TestRWXAttachesOnBothNodes(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("rwx")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	e.startController(adc.Options{})
	nodeA, nodeB := e.node("a", true), e.node("b", true)
	claim := e.boundClaim(e.csiPV("vol", driver, "h-rwx", v1.ReadWriteMany))
	e.pod("pod-a", nodeA, []string{claim})
	e.pod("pod-b", nodeB, []string{claim})
	unique := csiUnique(driver, "h-rwx")
	for _, n := range []string{nodeA, nodeB} {
		e.eventually("VolumeAttachment on "+n, 10*time.Second, e.vaExists(vaName("h-rwx", driver, n)))
		e.eventually("listed on "+n, 10*time.Second, e.listedOnNode(n, unique))
	}
	for _, pod := range []string{"pod-a", "pod-b"} {
		if n, msgs := e.warningEvents(e.ns, pod, adc.ReasonFailedAttach); n != 0 {
			t.Errorf("%s got %d FailedAttachVolume Events for a ReadWriteMany volume: %s", pod, n, fmt.Sprint(msgs))
		}
	}
}
