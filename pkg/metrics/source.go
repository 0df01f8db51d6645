package metrics

import (
	"sync/atomic"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
)

// viewSource holds the function that returns the controller to describe; the collectors of
// one Metrics share it.
type viewSource struct {
	fn atomic.Pointer[func() rollout.ControllerView]
	// now is the clock of age metrics; tests replace it.
	now func() time.Time
}

func (s *viewSource) set(fn func() rollout.ControllerView) {
	if fn == nil {
		s.fn.Store(nil)
		return
	}
	s.fn.Store(&fn)
}

// view returns the controller to describe, or false when there is none (standby).
func (s *viewSource) view() (rollout.ControllerView, bool) {
	fn := s.fn.Load()
	if fn == nil {
		return nil, false
	}
	v := (*fn)()
	return v, v != nil
}

func (s *viewSource) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// PluginLabel is the plugin label of a pair in attachdetach_controller_total_volumes and
// adc_decisions, the convention of storage_operation_duration_seconds: the in-tree plugin
// name for in-tree volumes (whatever the mechanism, so a plugin's rollout is one label
// value), kubernetes.io/csi:<driver> for native CSI volumes, N/A when unknown.
func PluginLabel(p *readmodel.PairState) string {
	switch {
	case p.Plugin != "" && p.Plugin != migration.CSIPluginName:
		return p.Plugin
	case p.Driver != "":
		return readmodel.CSIPluginLabel(p.Driver)
	}
	return UnknownPlugin
}
