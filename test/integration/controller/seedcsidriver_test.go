package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc"
	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// seedCSIDriverCRD reads the seed CSIDriver CRD manifest shipped in deploy/crds.
func seedCSIDriverCRD(t *testing.T) *unstructured.Unstructured {
	return shippedCRD(t, "csi.storage.k8s.io_csidrivers.yaml")
}

// createSeedCSIDriver creates a csi.storage.k8s.io/v1alpha1 CSIDriver, as an installer of
// that era would. The objects go away with the CRD at the end of the test.
func (e *testEnv) createSeedCSIDriver(name string, attachRequired *bool) {
	e.t.Helper()
	u, err := seedcsidriver.ToUnstructured(&seedcsidriver.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: seedcsidriver.CSIDriverSpec{AttachRequired: attachRequired}})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.cp.Dynamic.Resource(seedcsidriver.GroupVersionResource).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating seed CSIDriver %s: %v", name, err)
	}
}

// setSeedAttachRequired changes a seed CSIDriver's attachRequired in place (the CRD has no
// immutability rule, unlike storage.k8s.io/v1 once did).
func (e *testEnv) setSeedAttachRequired(name string, required bool) {
	e.t.Helper()
	api := e.cp.Dynamic.Resource(seedcsidriver.GroupVersionResource)
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := unstructured.SetNestedField(u.Object, required, "spec", "attachRequired"); err != nil {
			return false, err
		}
		_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		e.t.Fatalf("setting attachRequired=%v on seed CSIDriver %s: %v", required, name, err)
	}
}

// withBufferedLog returns the env with a context whose logger also keeps what it logs, so the
// test can count log lines of the controllers it starts.
func (e *testEnv) withBufferedLog() (*testEnv, func() string) {
	logger := ktesting.NewLogger(e.t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	sub := *e
	sub.ctx = klog.NewContext(e.ctx, logger)
	return &sub, func() string {
		if u, ok := logger.GetSink().(ktesting.Underlier); ok {
			return u.GetBuffer().String()
		}
		return ""
	}
}

// seedCase is one row of the decision table on the control plane: which CSIDriver objects
// exist for the case's driver, and what each driver-info source must make of them.
type seedCase struct {
	name string
	// hasV1 and hasSeed say whether the storage.k8s.io/v1 and the seed CSIDriver exist; v1
	// and seed are their attachRequired (nil: unset).
	hasV1, hasSeed bool
	v1, seed       *bool
	// want is the mechanism per source, because a substring of the reason naming the object
	// that decided.
	want    map[migration.DriverSource]migration.Mechanism
	because map[migration.DriverSource]string
}

func seedCases() []seedCase {
	csi, none := migration.MechanismCSI, migration.MechanismCSINoAttach
	const v1, seed, nowhere = "(storage.k8s.io/v1)", "(csi.storage.k8s.io/v1alpha1)", "no CSIDriver"
	all := func(c, s, a migration.Mechanism) map[migration.DriverSource]migration.Mechanism {
		return map[migration.DriverSource]migration.Mechanism{migration.DriverSourceCSIDriver: c, migration.DriverSourceSeed: s, migration.DriverSourceAuto: a}
	}
	why := func(c, s, a string) map[migration.DriverSource]string {
		return map[migration.DriverSource]string{migration.DriverSourceCSIDriver: c, migration.DriverSourceSeed: s, migration.DriverSourceAuto: a}
	}
	return []seedCase{
		{name: "absent", want: all(csi, csi, csi), because: why(nowhere, nowhere, nowhere)},
		{name: "seed-unset", hasSeed: true, want: all(csi, none, none),
			because: why(nowhere, seed+" does not set attachRequired", seed+" does not set attachRequired")},
		{name: "seed-true", hasSeed: true, seed: ptr.To(true), want: all(csi, csi, csi),
			because: why(nowhere, seed+" has attachRequired=true", seed+" has attachRequired=true")},
		{name: "seed-false", hasSeed: true, seed: ptr.To(false), want: all(csi, none, none),
			because: why(nowhere, seed+" has attachRequired=false", seed+" has attachRequired=false")},
		{name: "both-disagree", hasV1: true, v1: ptr.To(false), hasSeed: true, seed: ptr.To(true), want: all(none, csi, none),
			because: why(v1+" has attachRequired=false", seed+" has attachRequired=true", v1+" has attachRequired=false")},
		// The API server defaults an unset storage.k8s.io/v1 attachRequired to true (the
		// engine's "unset means true" covers objects from elsewhere); the seed CRD has no
		// default, so there unset stays unset and means false.
		{name: "both-unset", hasV1: true, hasSeed: true, want: all(csi, none, csi),
			because: why(v1+" has attachRequired=true", seed+" does not set attachRequired", v1+" has attachRequired=true")},
	}
}

// The seed-API CSIDriver as source of attachRequired, on a control plane. The subtests run in
// order, because the CRD is cluster-wide: first a seed controller without the CRD (attach
// required, said once in the log), which picks the CRD up when it is installed, without a
// restart; then the decision table for each --driver-info-source, where `adc plan`'s report
// and the controller's VolumeAttachments must agree; finally attachRequired flips of a seed
// object, which must not leak a VolumeAttachment (kubernetes#129572).
func TestSeedCSIDriverSource(t *testing.T) {
	e := newEnv(t)
	crd := seedCSIDriverCRD(t)
	removeCRD(e.ctx, t, e.cp.Dynamic, crd.GetName())
	// Registered before any controller starts, so it runs after they stopped.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		removeCRD(ctx, t, e.cp.Dynamic, crd.GetName())
	})

	cases := seedCases()
	drivers := []string{e.driverName("nocrd"), e.driverName("flip"), e.driverName("flipup")}
	for _, c := range cases {
		drivers = append(drivers, e.driverName(c.name))
	}
	e.startAttacher(&simulator.ExternalAttacher{Drivers: drivers})
	seedCfg := migration.DefaultConfig()
	seedCfg.DriverSource = migration.DriverSourceSeed

	t.Run("without the CRD then installed later", func(t *testing.T) {
		e, logs := e.withT(t).withBufferedLog()
		ctrl := e.startController(adc.Options{Migration: seedCfg, CRDPollInterval: 100 * time.Millisecond})
		node := e.node("nocrd", true)
		driver := e.driverName("nocrd")
		for _, pod := range []string{"nocrd-1", "nocrd-2"} {
			e.attachedCSI(pod, node, driver, "h-"+pod)
			e.pairIs(ctrl.Controller, node, pod, "data-0", 5*time.Second, func(s readmodel.PairState) bool {
				return s.Mechanism == migration.MechanismCSI && strings.Contains(s.Reason, `no CSIDriver "`+driver+`" exists in csi.storage.k8s.io/v1alpha1`)
			})
		}
		if n := strings.Count(logs(), "Seed CSIDriver CRD is not installed"); n != 1 {
			t.Errorf("the missing CRD was logged %d times, want exactly once (not per volume)", n)
		}

		e.installCRD(crd)
		e.createSeedCSIDriver(driver, ptr.To(false))
		// The API server answers the first watch of a just-established CRD with Retry-After:
		// 1s, so this takes a few seconds whatever adc does.
		e.pairIs(ctrl.Controller, node, "nocrd-1", "data-0", 15*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseAttached && strings.Contains(s.Reason, "(csi.storage.k8s.io/v1alpha1) has attachRequired=false")
		})
		e.deletePod("nocrd-1")
		e.deletePod("nocrd-2")
		for _, pod := range []string{"nocrd-1", "nocrd-2"} {
			e.eventually("VolumeAttachment of "+pod+" deleted after the pod", 10*time.Second, e.vaGone(vaName("h-"+pod, driver, node)))
		}
		ctrl.stop()
	})
	if t.Failed() {
		return
	}

	// The objects of the table, created once; every source sees the same cluster.
	for _, c := range cases {
		d := e.driverName(c.name)
		if c.hasV1 {
			e.createCSIDriver(d, c.v1)
		}
		if c.hasSeed {
			e.createSeedCSIDriver(d, c.seed)
		}
	}
	for _, source := range migration.DriverSources {
		t.Run("decision table with "+string(source), func(t *testing.T) {
			e := e.withT(t)
			cfg := migration.DefaultConfig()
			cfg.DriverSource = source
			ctrl := e.startController(adc.Options{Migration: cfg})
			node := e.node("table-"+string(source), true)
			pods := map[string]string{} // case name -> pod name
			for _, c := range cases {
				pod := string(source) + "-" + c.name
				pods[c.name] = pod
				e.pod(pod, node, []string{e.boundClaim(e.csiPV(pod, e.driverName(c.name), "h-"+pod))})
			}

			report, err := plan.Build(e.ctx, plan.Clients{Kube: e.client, Dynamic: e.cp.Dynamic}, cfg)
			if err != nil {
				t.Fatalf("building the plan: %v", err)
			}
			rows := map[string]plan.Row{}
			for _, r := range report.Decisions {
				rows[r.Pod] = r
			}
			for _, c := range cases {
				pod, driver := pods[c.name], e.driverName(c.name)
				want := c.want[source]
				row := rows[e.ns+"/"+pod]
				if row.Mechanism != want || !strings.Contains(row.Reason, c.because[source]) || !strings.Contains(row.Reason, `"`+driver+`"`) {
					t.Errorf("%s: plan says %s %q, want %s naming %q and the driver", c.name, row.Mechanism, row.Reason, want, c.because[source])
				}
				va := vaName("h-"+pod, driver, node)
				s := e.pairIs(ctrl.Controller, node, pod, "data-0", 10*time.Second, func(s readmodel.PairState) bool {
					if want == migration.MechanismCSI {
						return s.Mechanism == want && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == va
					}
					return s.Mechanism == want && s.Phase == readmodel.PhaseNotNeeded
				})
				if s.Reason != row.Reason {
					t.Errorf("%s: the controller's reason %q differs from the plan's %q", c.name, s.Reason, row.Reason)
				}
				if want == migration.MechanismCSI {
					e.eventually(c.name+": VolumeAttachment exists", 5*time.Second, e.vaExists(va))
				}
			}
			e.consistently("no VolumeAttachment for the csi-no-attach cases", 300*time.Millisecond, func() (bool, string) {
				for _, c := range cases {
					if c.want[source] != migration.MechanismCSINoAttach {
						continue
					}
					if ok, msg := e.vaGone(vaName("h-"+pods[c.name], e.driverName(c.name), node))(); !ok {
						return false, c.name + ": " + msg
					}
				}
				return true, ""
			})

			for _, pod := range pods {
				e.deletePod(pod)
			}
			e.eventually("no VolumeAttachment left on "+node, 15*time.Second, func() (bool, string) {
				vas := e.vasOnNode(node)
				return len(vas) == 0, fmt.Sprintf("%d left", len(vas))
			})
			ctrl.stop()
		})
	}

	t.Run("attachRequired flips of a seed object", func(t *testing.T) {
		e := e.withT(t)
		flip, flipUp := e.driverName("flip"), e.driverName("flipup")
		e.createSeedCSIDriver(flip, ptr.To(true))
		e.createSeedCSIDriver(flipUp, nil)
		ctrl := e.startController(adc.Options{Migration: seedCfg})
		node := e.node("flip", true)

		// true -> false while attached: kept while the pod runs, detached when it goes.
		name, unique := e.attachedCSI("down", node, flip, "h-down")
		e.setSeedAttachRequired(flip, false)
		e.pairIs(ctrl.Controller, node, "down", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseAttached && s.VolumeAttachment == name
		})
		e.consistently("attachment kept while the pod runs", 300*time.Millisecond, func() (bool, string) {
			if ok, msg := e.vaExists(name)(); !ok {
				return false, msg
			}
			return e.listedOnNode(node, unique)()
		})
		e.deletePod("down")
		e.eventually("VolumeAttachment deleted after the pod", 10*time.Second, e.vaGone(name))
		e.eventually("volume removed from node status", 5*time.Second, e.notListedOnNode(node, unique))

		// unset (false) -> true: the running pod's volume gets its VolumeAttachment.
		e.pod("up", node, []string{e.boundClaim(e.csiPV("up", flipUp, "h-up"))})
		e.pairIs(ctrl.Controller, node, "up", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
			return s.Mechanism == migration.MechanismCSINoAttach && s.Phase == readmodel.PhaseNotNeeded
		})
		up, upUnique := vaName("h-up", flipUp, node), csiUnique(flipUp, "h-up")
		e.setSeedAttachRequired(flipUp, true)
		e.eventually("VolumeAttachment created once attachRequired=true", 10*time.Second, e.vaExists(up))
		e.eventually(upUnique+" listed in node status", 10*time.Second, e.listedOnNode(node, upUnique))
		e.deletePod("up")
		e.eventually("VolumeAttachment deleted after the pod", 10*time.Second, e.vaGone(up))
		e.eventually("nothing left in the snapshot for the node", 5*time.Second, func() (bool, string) {
			s := nodeSnapshot(ctrl.Controller, node)
			return len(s) == 0, fmt.Sprintf("%+v", s)
		})
	})
}
