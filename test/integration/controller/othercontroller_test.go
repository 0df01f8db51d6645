package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/test/simulator"
)

// Issue 42: kube-controller-manager's attach/detach controller left on next to adc. On the
// real API server (its managedFields are what adc reads), a write of status.volumesAttached
// by the field manager kube-controller-manager stops adc's writes: no VolumeAttachment for a
// new pod, a Warning Event on the node, the state in OtherController(); once that manager has
// been quiet for the quiet period, adc attaches again by itself.
func TestOtherAttachDetachControllerFencesADC(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	const quiet = 3 * time.Second
	ctrl := e.startController(adc.Options{OtherControllerQuietPeriod: quiet})
	node := e.node("n1", true)
	claimA := e.boundClaim(e.csiPV("a", testDriver, "handle-a"))
	e.pod("a", node, []string{claimA})
	uniqueA := csiUnique(testDriver, "handle-a")
	e.eventually("a listed in node status by adc", 10*time.Second, e.listedOnNode(node, uniqueA))

	// kube-controller-manager writes the list its own way (another volume first).
	other := v1.AttachedVolume{Name: v1.UniqueVolumeName(csiUnique(testDriver, "handle-kcm"))}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"volumesAttached": []v1.AttachedVolume{other, {Name: v1.UniqueVolumeName(uniqueA)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kube-controller-manager"}, "status"); err != nil {
		t.Fatalf("patching node %s status as kube-controller-manager: %v", node, err)
	}
	e.eventually("Warning Event OtherAttachDetachController on the node", 10*time.Second, func() (bool, string) {
		got := e.events("default", node, adc.ReasonOtherController)
		return len(got) == 1 && strings.Contains(got[0], "kube-controller-manager"), fmt.Sprint(got)
	})
	if s := ctrl.OtherController(); !s.Fenced || s.Manager != "kube-controller-manager" || s.Node != node {
		t.Errorf("OtherController() = %+v, want fenced by kube-controller-manager on %s", s, node)
	}
	fencedAt := time.Now()

	// A pod scheduled now waits: adc writes nothing while fenced.
	claimB := e.boundClaim(e.csiPV("b", testDriver, "handle-b"))
	e.pod("b", node, []string{claimB})
	nameB := vaName("handle-b", testDriver, node)
	e.consistently("no VolumeAttachment for b while fenced", quiet/2, e.vaGone(nameB))
	n := e.nodeObj(node)
	if len(n.Status.VolumesAttached) != 2 || n.Status.VolumesAttached[0] != other {
		t.Errorf("status.volumesAttached = %v, want kube-controller-manager's list untouched", n.Status.VolumesAttached)
	}

	// Quiet for the quiet period: adc attaches b and writes the node's status again.
	e.eventually("VolumeAttachment for b once kube-controller-manager is quiet", 30*time.Second, e.vaExists(nameB))
	t.Logf("b attached %s after adc noticed kube-controller-manager (quiet period %s)", time.Since(fencedAt).Round(100*time.Millisecond), quiet)
	e.eventually("b listed in node status", 10*time.Second, e.listedOnNode(node, csiUnique(testDriver, "handle-b")))
	e.eventually("Normal Event OtherAttachDetachControllerGone", 10*time.Second, func() (bool, string) {
		got := e.events("default", node, adc.ReasonOtherControllerGone)
		return len(got) == 1, fmt.Sprint(got)
	})
	if s := ctrl.OtherController(); s.Fenced || len(s.Writes) != 1 || s.Writes[0].Count != 1 {
		t.Errorf("OtherController() = %+v, want not fenced, one write seen", s)
	}
}
