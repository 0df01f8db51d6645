package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// attachedCSI creates a claim of a native CSI volume and a pod using it on node, and waits
// until the volume is attached and listed in node status. It returns the VolumeAttachment's
// name and the unique name.
func (e *testEnv) attachedCSI(pod, node, driver, handle string) (string, string) {
	e.t.Helper()
	claim := e.boundClaim(e.csiPV(pod, driver, handle))
	e.pod(pod, node, []string{claim})
	name, unique := vaName(handle, driver, node), csiUnique(driver, handle)
	e.eventually("VolumeAttachment of "+pod, 10*time.Second, e.vaExists(name))
	e.eventually(unique+" listed in node status", 10*time.Second, e.listedOnNode(node, unique))
	return name, unique
}

// A CSIDriver created after a volume of its driver was attached: the volume was attached with
// a VolumeAttachment (no CSIDriver means attach is required); with attachRequired=false the
// next volume of the driver gets none, and the existing attachment is kept while its pod runs.
func TestCSIDriverAppearsLater(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("late")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)

	first, firstUnique := e.attachedCSI("first", node, driver, "h-first")
	e.pairIs(ctrl.Controller, node, "first", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
		return s.Mechanism == migration.MechanismCSI && s.Phase == readmodel.PhaseAttached
	})
	uid := e.vaUIDs(first)[first]

	e.createCSIDriver(driver, ptr.To(false))
	e.pairIs(ctrl.Controller, node, "first", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
		return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == first
	})
	e.pod("second", node, []string{e.boundClaim(e.csiPV("second", driver, "h-second"))})
	e.pairIs(ctrl.Controller, node, "second", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
		return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseNotNeeded
	})
	second := vaName("h-second", driver, node)
	e.consistently("no VolumeAttachment for the new volume, the old one kept", time.Second, func() (bool, string) {
		if ok, _ := e.vaGone(second)(); !ok {
			return false, "VolumeAttachment " + second + " created although the CSIDriver says attachRequired=false"
		}
		if got := e.vaUIDs(first)[first]; got != uid {
			return false, fmt.Sprintf("VolumeAttachment %s of the running pod was removed or replaced (uid %q, was %q)", first, got, uid)
		}
		if ok, msg := e.listedOnNode(node, firstUnique)(); !ok {
			return false, msg
		}
		return e.notListedOnNode(node, csiUnique(driver, "h-second"))()
	})
}

// setAttachRequired changes a CSIDriver's attachRequired. The field has been immutable in
// storage.k8s.io/v1; when the API server rejects the update, the driver is deleted and
// created again, which is how a cluster admin (or a driver's Helm upgrade) flips it.
func (e *testEnv) setAttachRequired(name string, required bool) string {
	e.t.Helper()
	api := e.client.StorageV1().CSIDrivers()
	d, err := api.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading CSIDriver %s: %v", name, err)
	}
	d.Spec.AttachRequired = ptr.To(required)
	_, err = api.Update(e.ctx, d, metav1.UpdateOptions{})
	if err == nil {
		return "updated in place"
	}
	if !apierrors.IsInvalid(err) {
		e.t.Fatalf("updating CSIDriver %s: %v", name, err)
	}
	if err := api.Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting CSIDriver %s: %v", name, err)
	}
	if err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := api.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		e.t.Fatalf("CSIDriver %s not deleted: %v", name, err)
	}
	d = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: d.Spec}
	if _, err := api.Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating CSIDriver %s again: %v", name, err)
	}
	return "deleted and created again (the API server rejected the update: " + err.Error() + ")"
}

// An attachRequired flip from true to false while a volume is attached does not leak its
// VolumeAttachment (kubernetes#129572): when the pod goes, the normal detach path removes the
// volume from node status and deletes the VolumeAttachment.
func TestAttachRequiredFlipLeaksNothing(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("flip")
	e.createCSIDriver(driver, ptr.To(true))
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	ctrl := e.startController(adc.Options{})
	node := e.node("n1", true)
	name, unique := e.attachedCSI("app", node, driver, "h-flip")

	how := e.setAttachRequired(driver, false)
	t.Logf("CSIDriver attachRequired flipped to false: %s", how)
	e.pairIs(ctrl.Controller, node, "app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
		return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == name
	})
	e.consistently("attachment kept while the pod runs", 300*time.Millisecond, func() (bool, string) {
		if ok, msg := e.vaExists(name)(); !ok {
			return false, msg
		}
		return e.listedOnNode(node, unique)()
	})

	e.deletePod("app")
	e.eventually("VolumeAttachment deleted after the pod", 10*time.Second, e.vaGone(name))
	e.eventually("volume removed from node status", 5*time.Second, e.notListedOnNode(node, unique))
	e.eventually("nothing left in the snapshot for the node", 5*time.Second, func() (bool, string) {
		s := nodeSnapshot(ctrl.Controller, node)
		return len(s) == 0, fmt.Sprintf("%+v", s)
	})
}
