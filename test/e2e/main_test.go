// Package e2e runs adc end to end with the real parts it talks to in a cluster (real
// kubelets, the real external-attacher, a real CSI driver; see package harness) and checks the
// contract between them from the API objects and from the driver's call log.
//
// TestMain starts one shared stack: three nodes and three drivers (an attachable one, the
// gce-pd CSI driver for migrated in-tree volumes, and one with attachRequired=false). Each
// test works in a namespace of its own on it. Tests that break the stack (kill adc, restart
// the API server) start their own with harness.Start. After the tests it checks, from the
// drivers' call logs, that every volume detached on the shared stack was unpublished and
// unstaged by its kubelet first (harness.DetachOrderViolations).
//
// adc runs as the ServiceAccount of deploy/kubernetes under exactly the RBAC shipped there
// (harness.Options.ShippedRBAC), on the shared stack and on the tests' own stacks; each
// stack fails its suite or test on any request of adc the API server refused (403), from its
// audit log.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// NoAttachDriver is the shared stack's driver whose CSIDriver says attachRequired=false.
const NoAttachDriver = "noattach.csi.e2e.example.com"

var (
	// adcBinary is the adc binary built for this package, run as users run it.
	adcBinary string
	// shared is the stack the tests share.
	shared *harness.Stack
	// timeline watches the shared stack for the latency figures.
	timeline *harness.Timeline
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bin, cleanup, err := framework.BuildADC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cleanup()
	adcBinary = bin

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shared, err = harness.Start(ctx, harness.Options{
		Drivers: []harness.DriverOptions{
			{Name: harness.DefaultDriver},
			{Name: harness.GCEPDDriver},
			{Name: NoAttachDriver, NoAttach: true},
		},
		ADCBinary:   adcBinary,
		ShippedRBAC: true,
		Log:         os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the shared stack:", err)
		return 1
	}
	if timeline, err = shared.WatchTimeline(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = shared.Stop()
		return 1
	}
	code := m.Run()
	if err := countUnregisteredDriverWarnings(shared, "shared stack"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	if err := reportUnregisteredDriverWarnings(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	// adc ran as its ServiceAccount under deploy/kubernetes' RBAC: nothing it asked was refused.
	if err := adcRefused(shared, func(f string, a ...any) { fmt.Fprintf(os.Stderr, "e2e: "+f+"\n", a...) }); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: shared stack:", err)
		code = 1
	}
	// Every volume of every test on the shared stack: unmounted before it was detached.
	if v := sharedDetachOrderViolations(shared); len(v) > 0 {
		fmt.Fprintln(os.Stderr, "e2e: volumes detached before the kubelet let go of them:")
		for _, l := range v {
			fmt.Fprintln(os.Stderr, "  -", l)
		}
		code = 1
	}
	cancel()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the shared stack:", err)
		code = 1
	}
	if left := shared.Leftovers(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "e2e: the shared stack left things behind:")
		for _, l := range left {
			fmt.Fprintln(os.Stderr, "  -", l)
		}
		code = 1
	}
	return code
}

// adcRefused returns an error listing every request of adc that the stack's API server
// refused (403), from its audit log; the stack must run with Options.ShippedRBAC. 403s the
// server answered while it was not ready after a restart (its RBAC authorizer's caches not
// yet synced, kubernetes#121635) are left out and only counted to logf.
func adcRefused(s *harness.Stack, logf func(format string, args ...any)) error {
	reqs, err := framework.ReadAudit(s.ControlPlane())
	if err != nil {
		return err
	}
	reqs, notReady := framework.ReceivedOutside(reqs, s.ControlPlane().NotReady())
	if n := len(auditlog.Forbidden(notReady, s.ADCUser())); n > 0 {
		logf("%d requests of %s refused (403) while the kube-apiserver was not ready after a restart; not counted", n, s.ADCUser())
	}
	return framework.CheckNoForbidden(reqs, s.ADCUser())
}

// failWithLogs adds the stack's recent logs to a failed test's output.
func failWithLogs(t *testing.T, s *harness.Stack) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Logs(40))
		}
	})
}
