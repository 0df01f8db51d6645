package harness

import (
	"fmt"
	"sort"
	"time"
)

// DetachOrderViolations checks the order a volume must leave a node in, as the driver saw it:
// the kubelet unpublishes (NodeUnpublishVolume) and unstages (NodeUnstageVolume) the volume
// before anyone detaches it (ControllerUnpublishVolume). It replays calls (one driver's log,
// any number of volumes) per volume and returns one line per ControllerUnpublishVolume that
// started while some node still had the volume staged or published; none means the order held.
//
// A stage or publish counts from when it arrived (a mount in progress is a mount), an
// unpublish or unstage from when it returned, and only successful node calls change what a
// node holds. Every ControllerUnpublishVolume attempt is checked, failed ones too: the attempt
// itself means the VolumeAttachment was deleted while the volume was in use.
//
// The driver's node id is the same for every node, so the log does not say which node a
// ControllerUnpublishVolume detaches from: the check holds for volumes attached to one node
// at a time (ReadWriteOnce), and does not apply where a detach of a mounted volume is the
// point (a forced detach after --max-wait-for-unmount or on an out-of-service node).
func DetachOrderViolations(calls []Call) []string {
	type step struct {
		at   time.Time
		call Call
	}
	byVolume := map[string][]step{}
	for _, c := range calls {
		if c.VolumeID == "" {
			continue
		}
		at := c.Time
		switch c.Method {
		case "NodeStageVolume", "NodePublishVolume", "ControllerUnpublishVolume":
			at = c.Start
		case "NodeUnstageVolume", "NodeUnpublishVolume":
		default:
			continue
		}
		byVolume[c.VolumeID] = append(byVolume[c.VolumeID], step{at: at, call: c})
	}
	volumes := make([]string, 0, len(byVolume))
	for v := range byVolume {
		volumes = append(volumes, v)
	}
	sort.Strings(volumes)

	var out []string
	for _, v := range volumes {
		steps := byVolume[v]
		// Node calls before a ControllerUnpublishVolume at the same instant: an unmount that
		// returned as the detach arrived is in order.
		sort.SliceStable(steps, func(i, j int) bool {
			if !steps[i].at.Equal(steps[j].at) {
				return steps[i].at.Before(steps[j].at)
			}
			return steps[i].call.Method != "ControllerUnpublishVolume" && steps[j].call.Method == "ControllerUnpublishVolume"
		})
		staged := map[string]time.Time{}    // node -> NodeStageVolume that is not undone yet
		published := map[string]time.Time{} // node -> NodePublishVolume that is not undone yet
		for _, s := range steps {
			c := s.call
			if c.Method == "ControllerUnpublishVolume" {
				for _, node := range sortedKeys(published) {
					out = append(out, fmt.Sprintf("%s: ControllerUnpublishVolume at %s (%s) while node %s still had it published (NodePublishVolume at %s, no NodeUnpublishVolume before)",
						v, stamp(c.Start), c.Code, node, stamp(published[node])))
				}
				for _, node := range sortedKeys(staged) {
					out = append(out, fmt.Sprintf("%s: ControllerUnpublishVolume at %s (%s) while node %s still had it staged (NodeStageVolume at %s, no NodeUnstageVolume before)",
						v, stamp(c.Start), c.Code, node, stamp(staged[node])))
				}
				continue
			}
			if c.Code != "OK" || c.Node == "" {
				continue
			}
			switch c.Method {
			case "NodeStageVolume":
				staged[c.Node] = c.Start
			case "NodePublishVolume":
				published[c.Node] = c.Start
			case "NodeUnstageVolume":
				delete(staged, c.Node)
			case "NodeUnpublishVolume":
				delete(published, c.Node)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stamp formats a call time to the microsecond, as the call logs order calls.
func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
