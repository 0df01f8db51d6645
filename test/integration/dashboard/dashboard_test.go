package dashboard

import "testing"

// TestDashboardRollout seeds one mid-rollout cluster with a running controller and checks
// what operators see of it: the dashboard in a real browser, and `adc status`.
func TestDashboardRollout(t *testing.T) {
	rc := seedCluster(t)
	t.Run("browser", func(t *testing.T) { testBrowser(t, rc) })
	t.Run("adc status", func(t *testing.T) { testStatus(t, rc) })
	// Last: it makes the lagging nodes report gce-pd migrated.
	t.Run("adc status --check-complete", func(t *testing.T) { testCheckComplete(t, rc) })
}
