package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// inUseAfterPodDeleted attaches a CSI volume for a pod on node, has the simulated kubelet
// report it in use, deletes the pod and waits until the controller blocks the detach. It
// returns the VolumeAttachment's name and the unique name.
func (e *testEnv) inUseAfterPodDeleted(ctrl *adc.Controller, pod, node, driver, handle string) (string, string) {
	e.t.Helper()
	name, unique := e.attachedCSI(pod, node, driver, handle)
	if err := e.kubelet.SetVolumesInUse(e.ctx, node, unique); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("the controller sees "+unique+" in use", 5*time.Second, func() (bool, string) {
		return inUse(e.nodeObj(node), unique), "not in volumesInUse yet"
	})
	e.deletePod(pod)
	e.eventually("detach of "+pod+"'s volume blocked while in use", 5*time.Second, func() (bool, string) {
		for _, s := range nodeSnapshot(ctrl, node) {
			if s.VolumeAttachment == name {
				return s.Phase == readmodel.PhaseDetachBlocked, string(s.Phase) + ": " + s.Reason
			}
		}
		return false, "no snapshot entry for " + name
	})
	return name, unique
}

func inUse(n *v1.Node, unique string) bool {
	for _, u := range n.Status.VolumesInUse {
		if string(u) == unique {
			return true
		}
	}
	return false
}

// keptAttached checks a VolumeAttachment still exists and its volume is still listed.
func (e *testEnv) keptAttached(name, node, unique string) func() (bool, string) {
	return func() (bool, string) {
		if ok, msg := e.vaExists(name)(); !ok {
			return false, msg
		}
		return e.listedOnNode(node, unique)()
	}
}

// The out-of-service taint detaches a volume the kubelet still reports in use, at once, with
// one ForcedDetach Warning Event on the node.
func TestForceDetachOutOfService(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("oos")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{}) // max-wait-for-unmount stays at its 6 minutes
	node := e.node("n1", true)
	name, unique := e.inUseAfterPodDeleted(ctrl.Controller, "app", node, driver, "h-oos")
	e.consistently("kept while in use on a healthy node", 300*time.Millisecond, e.keptAttached(name, node, unique))

	e.taint(node, v1.Taint{Key: adc.OutOfServiceTaint, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute})
	e.eventually("volume removed from node status", 30*time.Second, e.notListedOnNode(node, unique))
	e.eventually("VolumeAttachment force-deleted", 30*time.Second, e.vaGone(name))
	if !inUse(e.nodeObj(node), unique) {
		t.Fatalf("test bug: the volume is no longer reported in use, so the detach was not forced")
	}
	msg := e.oneWarningEvent(metav1.NamespaceDefault, node, adc.ReasonForcedDetach, 300*time.Millisecond)
	if !strings.Contains(msg, adc.OutOfServiceTaint) {
		t.Errorf("ForcedDetach message %q does not name the out-of-service taint", msg)
	}
}

// A node not Ready for longer than max-wait-for-unmount (2 s here) gets its in-use volumes
// detached, not before; a Ready node with a volume in use keeps it however long it takes.
func TestForceDetachNotReady(t *testing.T) {
	const maxWait = 2 * time.Second
	e := newEnv(t)
	driver := e.driverName("nr")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{MaxWaitForUnmount: maxWait})
	sick, healthy := e.node("sick", true), e.node("healthy", true)
	sickVA, sickUnique := e.inUseAfterPodDeleted(ctrl.Controller, "on-sick", sick, driver, "h-sick")
	healthyVA, healthyUnique := e.inUseAfterPodDeleted(ctrl.Controller, "on-healthy", healthy, driver, "h-healthy")

	// The Ready condition's lastTransitionTime has second precision: set it to a whole second
	// (at most 1 s ago), so the deadline is more than max-wait - 1 s = 1 s away; check the
	// first 700 ms of that second.
	start := time.Now()
	if err := e.kubelet.SetReady(e.ctx, sick, false, start.Truncate(time.Second)); err != nil {
		t.Fatal(err)
	}
	e.consistently("not detached before max-wait-for-unmount", maxWait/2-300*time.Millisecond, func() (bool, string) {
		if ok, msg := e.keptAttached(sickVA, sick, sickUnique)(); !ok {
			return false, msg
		}
		return e.keptAttached(healthyVA, healthy, healthyUnique)()
	})
	e.eventually("in-use volume of the not-Ready node detached", maxWait+30*time.Second, e.vaGone(sickVA))
	t.Logf("detached %s after the node was set not Ready", time.Since(start).Round(10*time.Millisecond))
	e.eventually("removed from the not-Ready node's status", 10*time.Second, e.notListedOnNode(sick, sickUnique))
	msg := e.oneWarningEvent(metav1.NamespaceDefault, sick, adc.ReasonForcedDetach, 500*time.Millisecond)
	if !strings.Contains(msg, "not been Ready") {
		t.Errorf("ForcedDetach message %q does not say the node is not Ready", msg)
	}

	e.consistently("Ready node's in-use volume never force-detached", time.Second, e.keptAttached(healthyVA, healthy, healthyUnique))
	if n, msgs := e.warningEvents(metav1.NamespaceDefault, healthy, adc.ReasonForcedDetach); n != 0 {
		t.Errorf("Ready node got %d ForcedDetach Events: %q", n, msgs)
	}
	s := nodeSnapshot(ctrl.Controller, healthy)
	if len(s) != 1 || s[0].Phase != readmodel.PhaseDetachBlocked {
		t.Errorf("Ready node's snapshot = %+v, want one detach-blocked entry", s)
	}
}

// A deleted Node's VolumeAttachments are deleted: there is no kubelet left to use them.
func TestDeletedNodeDetached(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("del")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	name, unique := e.attachedCSI("app", node, driver, "h-del")
	if err := e.kubelet.SetVolumesInUse(e.ctx, node, unique); err != nil {
		t.Fatal(err)
	}

	if err := e.client.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node %s: %v", node, err)
	}
	e.eventually("VolumeAttachment of the deleted node deleted", 10*time.Second, e.vaGone(name))
	msg := e.oneWarningEvent(metav1.NamespaceDefault, name, adc.ReasonForcedDetach, 300*time.Millisecond)
	if !strings.Contains(msg, node) {
		t.Errorf("ForcedDetach message %q does not name the deleted node", msg)
	}
	e.eventually("deleted node gone from the snapshot", 5*time.Second, func() (bool, string) {
		s := nodeSnapshot(ctrl.Controller, node)
		return len(s) == 0, fmt.Sprintf("%+v", s)
	})
}
