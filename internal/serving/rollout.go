// Package serving publishes a controller's rollout on an HTTP server, for the programs that
// run one: `adc controller` and `adc-demo`.
package serving

import (
	"time"

	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/server"
)

// Rollout publishes the rollout of the controller that view returns (nil on a standby
// replica) as state metrics and as the dashboard on srv.
func Rollout(srv *server.Server, m *metrics.Metrics, cfg migration.Config, view func() rollout.ControllerView) {
	m.SetSource(view)
	dashboard.Register(srv, func() rollout.Report {
		if v := view(); v != nil {
			return rollout.FromController(v, time.Now())
		}
		return rollout.Standby(cfg, time.Now())
	})
}
