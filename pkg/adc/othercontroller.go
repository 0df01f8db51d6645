package adc

import (
	"context"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/othercontroller"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// ReasonOtherController is the Warning Event on a Node when adc sees another attach/detach
// controller write its status.volumesAttached or create a VolumeAttachment for it: adc
// stops writing until that controller has been quiet for --other-controller-quiet-period.
const ReasonOtherController = "OtherAttachDetachController"

// ReasonOtherControllerGone is the Normal Event on the Node of the last write adc saw of
// another attach/detach controller, once the quiet period passed and adc writes again.
const ReasonOtherControllerGone = "OtherAttachDetachControllerGone"

// DefaultOtherControllerQuietPeriod is Options.OtherControllerQuietPeriod's default: long
// enough that a controller that writes only when a pod comes or goes is not taken for gone
// on an idle cluster, short enough that a switch-off a little late costs minutes.
const DefaultOtherControllerQuietPeriod = othercontroller.DefaultQuietPeriod

// OtherController returns what adc saw of another attach/detach controller.
func (c *Controller) OtherController() readmodel.OtherController {
	s := c.guard.State()
	out := readmodel.OtherController{Fenced: s.Fenced, Manager: s.Last.Manager, Object: s.Last.Object, Name: s.Last.Name,
		Node: s.Last.Node, Seen: s.Last.Seen, Until: s.Until, QuietPeriod: c.guard.QuietPeriod()}
	for k, n := range s.Writes {
		out.Writes = append(out.Writes, readmodel.OtherControllerWrites{Manager: k.Manager, Object: k.Object, Count: n})
	}
	sort.Slice(out.Writes, func(i, j int) bool {
		if out.Writes[i].Manager != out.Writes[j].Manager {
			return out.Writes[i].Manager < out.Writes[j].Manager
		}
		return out.Writes[i].Object < out.Writes[j].Object
	})
	return out
}

// noteOtherWrite says loudly, once per episode, that another controller writes: a log line
// and a Warning Event on the node. Every write seen extends the fence.
func (c *Controller) noteOtherWrite(w othercontroller.Write, seen, opened bool) {
	if !seen {
		return
	}
	logger := klog.Background().WithName(ComponentName)
	if !opened {
		logger.V(4).Info("Another attach/detach controller wrote again; fence extended", "write", w.String(), "quietPeriod", c.guard.QuietPeriod())
		return
	}
	logger.Info("Another attach/detach controller is writing what adc owns; adc stops attaching, detaching and writing node status until it is quiet",
		"write", w.String(), "fieldManager", w.Manager, "node", klog.KRef("", w.Node), "quietPeriod", c.guard.QuietPeriod())
	c.recorder.Eventf(nodeRef(w.Node), v1.EventTypeWarning, ReasonOtherController,
		"Another attach/detach controller is running: %s. adc stops attaching, detaching and writing node status until no such write "+
			"has been seen for %s. Switch off kube-controller-manager's attach/detach controller "+
			"(--controllers=*,-persistentvolume-attach-detach-controller), or stop the other controller.", w, c.guard.QuietPeriod())
}

// fenced reports whether adc must not write now, and how long to wait before asking again.
// The first call after a fence ends says that adc resumes.
func (c *Controller) fenced(ctx context.Context) (time.Duration, bool) {
	if left, fenced := c.guard.Fenced(); fenced {
		return left, true
	}
	if w, resumed := c.guard.Resumed(); resumed {
		klog.FromContext(ctx).Info("No write of another attach/detach controller seen for the quiet period; adc writes again",
			"lastWrite", w.String(), "quietPeriod", c.guard.QuietPeriod())
		c.recorder.Eventf(nodeRef(w.Node), v1.EventTypeNormal, ReasonOtherControllerGone,
			"No write of another attach/detach controller seen for %s (last: %s): adc attaches, detaches and writes node status again.",
			c.guard.QuietPeriod(), w)
		c.enqueueAllNodes()
	}
	return 0, false
}

// nodeRef is a Node's reference for Events (a Node's Events carry its name as UID, as the
// kubelet's do, so `kubectl describe node` finds them).
func nodeRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}
