package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// checkDetachOrder checks, from the driver's call log, that every node let go of each volume
// (NodeUnpublishVolume, NodeUnstageVolume) before the volume was detached
// (ControllerUnpublishVolume). Tests that delete pods call it for each of their volumes; the
// suite checks every volume of the shared stack again at its end (sharedDetachOrderViolations).
func checkDetachOrder(t *testing.T, s *harness.Stack, driver string, handles ...string) {
	t.Helper()
	for _, h := range handles {
		calls, err := s.Driver(driver).CallsFor(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range harness.DetachOrderViolations(calls) {
			t.Errorf("detach order: %s\n  calls: %s", v, formatCalls(calls))
		}
	}
}

// sharedDetachOrderViolations runs the detach-order check over every volume in every call log
// of s; TestMain fails the suite on any. A test whose point is to detach a mounted volume (a
// forced detach) or to attach one volume to several nodes at once runs on a stack of its own.
func sharedDetachOrderViolations(s *harness.Stack) []string {
	var out []string
	for _, d := range s.Drivers() {
		calls, err := d.Calls()
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		for _, v := range harness.DetachOrderViolations(calls) {
			out = append(out, d.Name+": "+v)
		}
	}
	return out
}

// formatCalls renders a volume's calls one per line, for failure messages.
func formatCalls(calls []harness.Call) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "\n    %s..%s %-26s node=%-14s %s %s", c.Start.Format("15:04:05.000000"), c.Time.Format("05.000000"), c.Method, c.Node, c.Code, c.Error)
	}
	return b.String()
}
