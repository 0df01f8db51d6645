package rollout

import (
	"fmt"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
)

// OtherController is what the leader saw of another attach/detach controller writing what
// adc owns (kube-controller-manager's own, left on next to adc): while Fenced, adc attaches,
// detaches and writes node status not at all.
type OtherController struct {
	// Fenced is true while adc writes nothing because of the other controller.
	Fenced bool `json:"fenced"`
	// Manager is the other writer's field manager; Object what it wrote
	// (Node/status.volumesAttached or VolumeAttachment), Name that object and Node its node.
	Manager string `json:"manager"`
	Object  string `json:"object"`
	Name    string `json:"name"`
	Node    string `json:"node"`
	// Seen is when adc saw the last such write; Until, while fenced, when adc writes again if
	// it sees no other.
	Seen  time.Time  `json:"seen"`
	Until *time.Time `json:"until,omitempty"`
	// Writes counts the other controller's writes seen since adc started.
	Writes int64 `json:"writes"`
	// Message says it in a sentence, with what to do.
	Message string `json:"message"`
}

// otherControllerRecord returns the report's record of another controller, nil when adc has
// seen none since it started.
func otherControllerRecord(o adc.OtherController) *OtherController {
	if o.Manager == "" {
		return nil
	}
	r := &OtherController{Fenced: o.Fenced, Manager: o.Manager, Object: o.Object, Name: o.Name, Node: o.Node, Seen: o.Seen}
	for _, w := range o.Writes {
		r.Writes += w.Count
	}
	what := fmt.Sprintf("field manager %s wrote %s %s (node %s) at %s", o.Manager, o.Object, o.Name, o.Node, o.Seen.UTC().Format(time.RFC3339))
	if o.Fenced {
		until := o.Until
		r.Until = &until
		r.Message = fmt.Sprintf("Another attach/detach controller is running: %s. adc attaches, detaches and writes node status "+
			"not at all until %s (%s without such a write). Switch off kube-controller-manager's attach/detach controller "+
			"(--controllers=*,-persistentvolume-attach-detach-controller).", what, o.Until.UTC().Format(time.RFC3339), o.QuietPeriod)
	} else {
		r.Message = fmt.Sprintf("Another attach/detach controller wrote earlier (%s); none for %s since, so adc writes again.", what, o.QuietPeriod)
	}
	return r
}
