package adc_test

import (
	"testing"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/rollout"
)

// `adc status` finds the controller's Events about another attach/detach controller by
// reason, spelled out in package rollout.
func TestRolloutReadsTheControllersEventReasons(t *testing.T) {
	if rollout.EventReasonOtherController != adc.ReasonOtherController || rollout.EventReasonOtherControllerGone != adc.ReasonOtherControllerGone {
		t.Errorf("rollout reads %q and %q, the controller records %q and %q", rollout.EventReasonOtherController,
			rollout.EventReasonOtherControllerGone, adc.ReasonOtherController, adc.ReasonOtherControllerGone)
	}
}
