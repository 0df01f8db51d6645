package controller

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

const testDriver = "csi.example.com"

// A native CSI volume: exact VolumeAttachment name and spec, then node status once the
// (simulated) external-attacher reports it attached.
func TestCSIPersistentVolumeEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	pv := e.csiPV("vol", testDriver, "handle-1")
	claim := e.boundClaim(pv)
	e.pod("app", node, []string{claim})

	name := vaName("handle-1", testDriver, node)
	e.eventually("VolumeAttachment created", 10*time.Second, e.vaExists(name))
	va, err := e.va(name)
	if err != nil {
		t.Fatal(err)
	}
	if va.Spec.Attacher != testDriver || va.Spec.NodeName != node {
		t.Errorf("spec = %+v, want attacher %s node %s", va.Spec, testDriver, node)
	}
	if va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != pv.Name || va.Spec.Source.InlineVolumeSpec != nil {
		t.Errorf("source = %+v, want persistentVolumeName %s", va.Spec.Source, pv.Name)
	}
	if len(va.Finalizers) != 0 {
		t.Errorf("finalizers = %v, want none from the controller", va.Finalizers)
	}
	unique := "kubernetes.io/csi/" + testDriver + "^handle-1"
	e.eventually("volume listed in node status", 10*time.Second, e.listedOnNode(node, unique))
	e.eventually("pair attached in snapshot", 5*time.Second, func() (bool, string) {
		s, ok := pairState(ctrl.Controller, node, e.ns+"/app", "data-0")
		return ok && s.Phase == readmodel.PhaseAttached && s.Mechanism == "csi" && s.VolumeAttachment == name, s.Reason + " " + string(s.Phase)
	})
	if n := len(e.vasOnNode(node)); n != 1 {
		t.Errorf("%d VolumeAttachments on the node, want exactly 1", n)
	}
}

// A node without CSINode holds a migrated plugin's volume (no attach) and retries with
// backoff; the CSINode's arrival, not a backoff retry, attaches it. The controller runs on a
// fake clock that the test steps while the pair is held and then stops: no retry can come due
// after that, so the VolumeAttachment that follows the CSINode is the CSINode event's doing.
func TestCSINodeMissingThenCreated(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{})
	clock := testingclock.NewFakeClock(time.Now())
	ctrl := e.startController(adc.Options{Clock: clock})
	node := e.node("late", true)
	claim := e.boundClaim(e.gcePV("pd", "disk-late", "us-central1-a"))
	e.pod("app", node, []string{claim})
	name := vaName("projects/UNSPECIFIED/zones/us-central1-a/disks/disk-late", "pd.csi.storage.gke.io", node)

	// Each look steps the clock past the backoff cap (2 s here), so the pair's scheduled retry
	// comes due and runs; done once two have run and the next is not due.
	var held readmodel.PairState
	e.eventually("pair held in wait with retries", 10*time.Second, func() (bool, string) {
		s, ok := pairState(ctrl.Controller, node, e.ns+"/app", "data-0")
		if ok && s.Mechanism == "wait" && s.Phase == readmodel.PhaseHeld && s.Retries >= 2 && s.NextRetry.After(clock.Now()) {
			held = s
			return true, ""
		}
		clock.Step(3 * time.Second)
		return false, fmt.Sprintf("%s %s retries=%d next=%s now=%s", s.Phase, s.Reason, s.Retries, s.NextRetry, clock.Now())
	})
	if _, err := e.va(name); err == nil {
		t.Fatalf("VolumeAttachment %s created before the node reported its migration state", name)
	}
	e.eventually("one wait Event for the pod", 5*time.Second, func() (bool, string) {
		ev := e.events(e.ns, "app", adc.ReasonWaitingForNode)
		return len(ev) == 1, ""
	})

	frozen := clock.Now()
	created := time.Now()
	e.csiNode(node, "kubernetes.io/gce-pd", "pd.csi.storage.gke.io")
	e.eventually("VolumeAttachment after CSINode creation", 10*time.Second, e.vaExists(name))
	t.Logf("VolumeAttachment created %s after the CSINode (wall clock), with the controller's clock stopped %s before its next retry",
		time.Since(created).Round(time.Millisecond), held.NextRetry.Sub(frozen))
	if !clock.Now().Equal(frozen) || !held.NextRetry.After(frozen) {
		t.Fatalf("the controller's clock moved (%s -> %s) or a retry was due (next %s): the attach may be a retry's", frozen, clock.Now(), held.NextRetry)
	}
	if got := len(e.events(e.ns, "app", adc.ReasonWaitingForNode)); got != 1 {
		t.Errorf("%d wait Events for the pod, want exactly 1 (one per pod and reason, not per retry)", got)
	}
}

// Detach after the pod is deleted, but not while the kubelet reports the volume in use; the
// volume leaves node status before its VolumeAttachment is deleted.
func TestDetachAfterPodDeletionBlockedWhileInUse(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	claim := e.boundClaim(e.csiPV("vol", testDriver, "h-detach"))
	e.pod("app", node, []string{claim})
	name := vaName("h-detach", testDriver, node)
	unique := "kubernetes.io/csi/" + testDriver + "^h-detach"
	e.eventually("listed in node status", 10*time.Second, e.listedOnNode(node, unique))

	if err := e.kubelet.SetVolumesInUse(e.ctx, node, unique); err != nil {
		t.Fatal(err)
	}
	e.deletePod("app")
	e.eventually("detach blocked in snapshot", 5*time.Second, func() (bool, string) {
		for _, s := range ctrl.Snapshot() {
			if s.VolumeAttachment == name && s.Phase == readmodel.PhaseDetachBlocked {
				return true, s.Reason
			}
		}
		return false, "no detach-blocked entry"
	})
	e.consistently("VolumeAttachment kept while in use", time.Second, func() (bool, string) {
		ok, msg := e.vaExists(name)()
		if !ok {
			return false, msg
		}
		return e.listedOnNode(node, unique)()
	})

	if err := e.kubelet.SetVolumesInUse(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	e.eventually("VolumeAttachment deleted", 10*time.Second, e.vaGone(name))
	if ok, msg := e.notListedOnNode(node, unique)(); !ok {
		t.Errorf("VolumeAttachment deleted while the node still lists the volume: %s", msg)
	}
}

// A driver whose CSIDriver says attachRequired=false gets no VolumeAttachment and nothing in
// node status.
func TestAttachRequiredFalse(t *testing.T) {
	e := newEnv(t)
	driver := e.ns + ".noattach.example.com"
	e.createCSIDriver(driver, ptr.To(false))
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	claim := e.boundClaim(e.csiPV("vol", driver, "h-noattach"))
	e.pod("app", node, []string{claim})
	e.eventually("pair decided csi-no-attach", 10*time.Second, func() (bool, string) {
		s, ok := pairState(ctrl.Controller, node, e.ns+"/app", "data-0")
		return ok && s.Mechanism == "csi-no-attach" && s.Phase == readmodel.PhaseNotNeeded, s.Reason
	})
	e.consistently("no VolumeAttachment, nothing listed", 500*time.Millisecond, func() (bool, string) {
		if vas := e.vasOnNode(node); len(vas) != 0 {
			return false, "VolumeAttachment " + vas[0].Name
		}
		if names := e.attachedNames(node); len(names) != 0 {
			return false, names[0]
		}
		return true, ""
	})
	_ = v1.ReadWriteOnce
}
