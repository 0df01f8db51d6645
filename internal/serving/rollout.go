// Package serving publishes a controller's rollout on an HTTP server, for the programs that
// run one: `adc controller` and `adc-demo`.
package serving

import (
	"fmt"
	"net/http"
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
	srv.AddReadyCheck(OtherControllerCheck(view))
	dashboard.Register(srv, func() rollout.Report {
		if v := view(); v != nil {
			return rollout.FromController(v, time.Now())
		}
		return rollout.Standby(cfg, time.Now())
	})
}

// OtherControllerCheck is the readiness check other-attach-detach-controller. It always
// passes: a replica fenced by another attach/detach controller is healthy, and restarting it
// or taking it out of a Service would not help; /readyz?verbose says why it writes nothing.
func OtherControllerCheck(view func() rollout.ControllerView) server.Check {
	return server.Check{Name: "other-attach-detach-controller",
		Check: func(*http.Request) error { return nil },
		Info: func() string {
			v := view()
			if v == nil {
				return ""
			}
			if o := v.OtherController(); o.Fenced {
				return fmt.Sprintf("fenced: another attach/detach controller writes (field manager %s wrote %s %s at %s); "+
					"adc writes nothing until %s", o.Manager, o.Object, o.Name, o.Seen.UTC().Format(time.RFC3339), o.Until.UTC().Format(time.RFC3339))
			}
			return ""
		}}
}
