package rollout

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/readmodel"
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
func otherControllerRecord(o readmodel.OtherController) *OtherController {
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

// The Event reasons adc's controller records about another attach/detach controller
// (adc.ReasonOtherController and adc.ReasonOtherControllerGone), spelled out so that a
// cluster read needs no controller package.
const (
	EventReasonOtherController     = "OtherAttachDetachController"
	EventReasonOtherControllerGone = "OtherAttachDetachControllerGone"
)

// otherControllerFromEvents tells, from the Events adc records on nodes, whether the leader is
// fenced by another attach/detach controller: the newest of its Warning (fenced) and Normal
// (gone) Events decides. Nil when there is none.
func otherControllerFromEvents(events []v1.Event) *OtherController {
	var newest *v1.Event
	var newestAt time.Time
	for i := range events {
		e := &events[i]
		if e.Reason != EventReasonOtherController && e.Reason != EventReasonOtherControllerGone {
			continue
		}
		if at := eventTime(e); newest == nil || at.After(newestAt) {
			newest, newestAt = e, at
		}
	}
	if newest == nil {
		return nil
	}
	return &OtherController{Fenced: newest.Reason == EventReasonOtherController, Node: newest.InvolvedObject.Name, Seen: newestAt,
		Message: fmt.Sprintf("adc's Event %s on node %s at %s: %s", newest.Reason, newest.InvolvedObject.Name, newestAt.UTC().Format(time.RFC3339), newest.Message)}
}

// eventTime is when an Event last happened.
func eventTime(e *v1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// listOtherControllerEvents lists adc's Events about another attach/detach controller (on
// Nodes, so in namespace default). A user who may not list Events gets no such line, not an
// error: the rest of the status does not need them.
func listOtherControllerEvents(ctx context.Context, c kubernetes.Interface) []v1.Event {
	var out []v1.Event
	for _, reason := range []string{EventReasonOtherController, EventReasonOtherControllerGone} {
		list, err := c.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("reason", reason),
				fields.OneTermEqualSelector("involvedObject.kind", "Node")).String()})
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Not listing adc's Events about another attach/detach controller", "err", err)
			return nil
		}
		out = append(out, list.Items...)
	}
	return out
}
