package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/migration-aware/adc/pkg/adc"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// crdResource addresses CustomResourceDefinitions through the dynamic client (no
// apiextensions clientset needed).
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// shippedCRD reads a CRD manifest shipped in deploy/crds.
func shippedCRD(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crds", file))
	if err != nil {
		t.Fatalf("reading the CRD manifest %s: %v", file, err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		t.Fatalf("parsing the CRD manifest %s: %v", file, err)
	}
	return crd
}

// csiNodeInfoCRD reads the CSINodeInfo CRD manifest.
func csiNodeInfoCRD(t *testing.T) *unstructured.Unstructured {
	return shippedCRD(t, "csi.storage.k8s.io_csinodeinfos.yaml")
}

// installCRD creates the CRD and waits until it is Established.
func (e *testEnv) installCRD(crd *unstructured.Unstructured) {
	e.t.Helper()
	api := e.cp.Dynamic.Resource(crdResource)
	if _, err := api.Create(e.ctx, crd.DeepCopy(), metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("installing CRD %s: %v", crd.GetName(), err)
	}
	e.eventually("CRD "+crd.GetName()+" established", 30*time.Second, func() (bool, string) {
		got, err := api.Get(e.ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]interface{}); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", conds)
	})
}

// removeCRD deletes the CRD (and with it every CSINodeInfo) and waits until it is gone, so
// that a later run of the test in the same control plane starts without it.
func removeCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, name string) {
	api := dyn.Resource(crdResource)
	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting CRD %s: %v", name, err)
		return
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := api.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("CRD %s not gone: %v", name, err)
	}
}

// reportCSINodeInfo creates the node's CSINodeInfo with one driver status, as a node agent of
// the seed API would.
func (e *testEnv) reportCSINodeInfo(node, driver string, mechanism csinodeinfo.VolumePluginMechanism) {
	e.t.Helper()
	info := &csinodeinfo.CSINodeInfo{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       csinodeinfo.CSINodeInfoSpec{Drivers: []csinodeinfo.CSIDriverInfoSpec{{Name: driver, NodeID: node}}},
		Status: csinodeinfo.CSINodeInfoStatus{Drivers: []csinodeinfo.CSIDriverInfoStatus{
			{Name: driver, Available: true, VolumePluginMechanism: mechanism},
		}},
	}
	u, err := csinodeinfo.ToUnstructured(info)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.cp.Dynamic.Resource(csinodeinfo.GroupVersionResource).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating CSINodeInfo %s: %v", node, err)
	}
}

// The seed-API CSINodeInfo as node migration source. The subtests run in order on one
// controller, because the CRD is cluster-wide: first without the CRD (the controller runs,
// the pair that needs it waits, other volumes attach), then the CRD is installed and the
// waiting pair is decided as soon as its node's CSINodeInfo appears, without a restart;
// finally a node whose CSINodeInfo says in-tree gets the in-tree mechanism.
func TestCSINodeInfoSource(t *testing.T) {
	e := newEnv(t)
	crd := csiNodeInfoCRD(t)
	// A previous run in the same control plane (go test -count) removed it; make sure.
	removeCRD(e.ctx, t, e.cp.Dynamic, crd.GetName())
	// Registered before the controller starts, so it runs after the controller stopped.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		removeCRD(ctx, t, e.cp.Dynamic, crd.GetName())
	})

	driver := e.driverName("cni")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver, gceDriver}})
	cfg := migration.DefaultConfig()
	cfg.NodeSource = migration.NodeSourceCSINodeInfo
	ctrl := e.startController(adc.Options{Migration: cfg, CRDPollInterval: 100 * time.Millisecond})
	node := e.node("mig", true)
	pd := e.ns + "-disk"
	e.pod("gce", node, []string{e.boundClaim(e.gcePV("gce", pd, "us-central1-a"))})
	gceVA := vaName(gceHandle("us-central1-a", pd), gceDriver, node)

	t.Run("without the CRD", func(t *testing.T) {
		e := e.withT(t)
		e.pairIs(ctrl.Controller, node, "gce", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismWait && s.Phase == readmodel.PhaseHeld && strings.Contains(s.Reason, "CSINodeInfo")
		})
		e.attachedCSI("plain", node, driver, "h-plain")
		if ok, msg := e.vaGone(gceVA)(); !ok {
			t.Errorf("gce-pd volume attached before its node's CSINodeInfo could be read: %s", msg)
		}
		e.oneWarningEvent(e.ns, "gce", adc.ReasonWaitingForNode, 200*time.Millisecond)
	})
	if t.Failed() {
		return
	}

	t.Run("CRD installed later", func(t *testing.T) {
		e := e.withT(t)
		e.installCRD(crd)
		e.consistently("still waiting while the node has no CSINodeInfo", 300*time.Millisecond, e.vaGone(gceVA))
		created := time.Now()
		e.reportCSINodeInfo(node, gceDriver, csinodeinfo.VolumePluginMechanismCSI)
		// The API server answers the first watch of a just-established CRD with Retry-After: 1s,
		// so this takes about 2 s whatever adc does.
		e.eventually("gce-pd volume attached through CSI once the CSINodeInfo says csi", 10*time.Second, e.vaExists(gceVA))
		t.Logf("VolumeAttachment created %s after the CSINodeInfo", time.Since(created).Round(time.Millisecond))
		e.pairIs(ctrl.Controller, node, "gce", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSI && s.Phase == readmodel.PhaseAttached && strings.Contains(s.Reason, "CSINodeInfo")
		})
	})

	t.Run("CSINodeInfo says in-tree", func(t *testing.T) {
		e := e.withT(t)
		other := e.node("intree", true)
		e.reportCSINodeInfo(other, gceDriver, csinodeinfo.VolumePluginMechanismInTree)
		e.pod("gce-intree", other, []string{e.boundClaim(e.gcePV("gce-intree", e.ns+"-disk2", "us-central1-a"))})
		e.pairIs(ctrl.Controller, other, "gce-intree", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismInTree && s.Phase == readmodel.PhaseHeld
		})
		msg := e.oneWarningEvent(e.ns, "gce-intree", adc.ReasonNoInTreeAttacher, 300*time.Millisecond)
		if !strings.Contains(msg, "CSINodeInfo") {
			t.Errorf("InTreeAttacherUnavailable message %q should say what the node's CSINodeInfo must report", msg)
		}
		if vas := e.vasOnNode(other); len(vas) != 0 {
			t.Errorf("VolumeAttachment %s created on a node whose CSINodeInfo says in-tree", vas[0].Name)
		}
	})
}
