package controller

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// Bad input is reported on the pair it concerns and nothing else: a malformed CSINode
// annotation still decides, a PersistentVolume that cannot be translated is an error with an
// AttachDecisionError Event, an unbound claim waits, an attach the external-attacher fails is
// one FailedAttachVolume Event with its message, and meanwhile good volumes attach, also ones
// added after the bad input was seen.
func TestBadInputKeepsControllerRunning(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("bad")
	const failMsg = "rpc error: code = ResourceExhausted desc = simulated: too many disks on the node"
	e.startAttacher(&simulator.ExternalAttacher{
		Drivers: []string{driver, gceDriver},
		AttachError: func(va *storagev1.VolumeAttachment) string {
			if pv := va.Spec.Source.PersistentVolumeName; pv != nil && strings.HasSuffix(*pv, "-failing") {
				return failMsg
			}
			return ""
		},
	})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	e.csiNode(node, " ,kubernetes.io/gce-pd,,bogus/plugin, kubernetes.io/gce-pd ", gceDriver, driver)

	// A PersistentVolume with no source at all cannot exist: the API server refuses it, so the
	// decision engine's "no source" error is only reachable through its unit tests. The
	// nearest bad PV the API accepts is one that csi-translation-lib cannot translate: a GCE
	// PD labelled with zones of two regions.
	noSource := e.csiPV("nosource", driver, "x")
	noSource.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{}
	if _, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, noSource, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("creating a PV with no source: got %v, want the API server to reject it as invalid", err)
	}
	badPV := e.gcePV("badzone", e.ns+"-badzone", "us-central1-a__europe-west1-b")
	e.pod("badpv", node, []string{e.boundClaim(badPV)})

	unbound := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: e.ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, unbound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pod("unbound", node, []string{"unbound"})
	e.pod("failing", node, []string{e.boundClaim(e.csiPV("failing", driver, "h-failing"))})

	t.Run("malformed CSINode annotation still decides", func(t *testing.T) {
		e := e.withT(t)
		pd := e.ns + "-good-pd"
		e.pod("gce", node, []string{e.boundClaim(e.gcePV("gce", pd, "us-central1-a"))})
		handle := gceHandle("us-central1-a", pd)
		e.eventually("migrated gce-pd volume attached through CSI", 10*time.Second, e.listedOnNode(node, csiUnique(gceDriver, handle)))
		e.pairIs(ctrl.Controller, node, "gce", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSI && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == vaName(handle, gceDriver, node)
		})
	})
	t.Run("untranslatable PV is an error with one Event", func(t *testing.T) {
		e := e.withT(t)
		e.pairIs(ctrl.Controller, node, "badpv", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismError && s.Phase == readmodel.PhaseHeld
		})
		msg := e.oneWarningEvent(e.ns, "badpv", adc.ReasonDecisionError, 500*time.Millisecond)
		if !strings.Contains(msg, badPV.Name) || !strings.Contains(msg, "zone") {
			t.Errorf("AttachDecisionError message %q should name the PV and say to fix its zone label", msg)
		}
	})
	t.Run("unbound claim waits", func(t *testing.T) {
		e := e.withT(t)
		e.pairIs(ctrl.Controller, node, "unbound", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismWait && s.Phase == readmodel.PhaseHeld && strings.Contains(s.Reason, "not bound")
		})
	})
	t.Run("attachError becomes one FailedAttachVolume Event", func(t *testing.T) {
		e := e.withT(t)
		name := vaName("h-failing", driver, node)
		e.eventually("attachError reported on the VolumeAttachment", 10*time.Second, func() (bool, string) {
			va, err := e.va(name)
			if err != nil {
				return false, err.Error()
			}
			return va.Status.AttachError != nil, "no attachError yet"
		})
		msg := e.oneWarningEvent(e.ns, "failing", adc.ReasonFailedAttach, 500*time.Millisecond)
		if !strings.Contains(msg, failMsg) {
			t.Errorf("FailedAttachVolume message %q does not carry the external-attacher's error %q", msg, failMsg)
		}
		s := e.pairIs(ctrl.Controller, node, "failing", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Phase == readmodel.PhaseAttaching
		})
		if !strings.Contains(s.Reason, failMsg) {
			t.Errorf("snapshot reason %q does not carry the attach error", s.Reason)
		}
		e.consistently("a failed attach is not listed in node status", 300*time.Millisecond, e.notListedOnNode(node, csiUnique(driver, "h-failing")))
	})
	t.Run("good volumes still attach", func(t *testing.T) {
		e := e.withT(t)
		e.attachedCSI("good", node, driver, "h-good")
		other := e.node("n2", true)
		e.attachedCSI("elsewhere", other, driver, "h-elsewhere")
	})
}
