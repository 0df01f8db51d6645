package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// attachCall is one call the controller made on the in-tree attacher.
type attachCall struct {
	op     string // "attach" or "detach"
	node   string
	volume adc.InTreeVolume
	// listed is whether, at the moment of a detach call, the node's status.volumesAttached
	// still listed the volume (the kubelet must have been told first).
	listed bool
}

// recordingAttacher is an adc.InTreeAttacher that attaches nothing and records every call;
// it is safe for the controller's concurrent workers.
type recordingAttacher struct {
	// listedOnNode, when set, is asked at each Detach whether the node still lists the
	// volume in its status.
	listedOnNode func(node, unique string) bool

	mu       sync.Mutex
	calls    []attachCall
	attached map[string]map[string]bool // node -> unique name
}

var _ adc.InTreeAttacher = &recordingAttacher{}

// devicePathOf is the device path the recording attacher reports for a volume.
func devicePathOf(unique string) string {
	return "/dev/disk/by-id/google-" + unique[strings.LastIndexByte(unique, '/')+1:]
}

func (a *recordingAttacher) Attach(_ context.Context, vol adc.InTreeVolume, node string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, attachCall{op: "attach", node: node, volume: vol})
	if a.attached == nil {
		a.attached = map[string]map[string]bool{}
	}
	if a.attached[node] == nil {
		a.attached[node] = map[string]bool{}
	}
	a.attached[node][vol.UniqueName] = true
	return devicePathOf(vol.UniqueName), nil
}

func (a *recordingAttacher) Detach(_ context.Context, vol adc.InTreeVolume, node string) error {
	listed := false
	if a.listedOnNode != nil {
		listed = a.listedOnNode(node, vol.UniqueName)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, attachCall{op: "detach", node: node, volume: vol, listed: listed})
	delete(a.attached[node], vol.UniqueName)
	return nil
}

func (a *recordingAttacher) VolumesAreAttached(_ context.Context, vols []adc.InTreeVolume, node string) (map[string]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]bool, len(vols))
	for _, v := range vols {
		out[v.UniqueName] = a.attached[node][v.UniqueName]
	}
	return out, nil
}

// callsOf returns the recorded calls of one kind on one node.
func (a *recordingAttacher) callsOf(op, node string) []attachCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []attachCall
	for _, c := range a.calls {
		if c.op == op && c.node == node {
			out = append(out, c)
		}
	}
	return out
}

func (a *recordingAttacher) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, c := range a.calls {
		parts = append(parts, fmt.Sprintf("%s(%s on %s)", c.op, c.volume.UniqueName, c.node))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// newRecordingAttacher returns a recording attacher that checks node status at detach time.
func (e *testEnv) newRecordingAttacher() *recordingAttacher {
	return &recordingAttacher{listedOnNode: func(node, unique string) bool {
		ok, _ := e.listedOnNode(node, unique)()
		return ok
	}}
}

// listedWithDevicePath checks the node lists the volume with the given device path.
func (e *testEnv) listedWithDevicePath(node, unique, devicePath string) func() (bool, string) {
	return func() (bool, string) {
		n := e.nodeObj(node)
		for _, av := range n.Status.VolumesAttached {
			if string(av.Name) == unique {
				return av.DevicePath == devicePath, fmt.Sprintf("%s listed with devicePath %q, want %q", unique, av.DevicePath, devicePath)
			}
		}
		return false, fmt.Sprintf("node %s lists %v, want %s", node, e.attachedNames(node), unique)
	}
}

// inTreeCases are the two ways a GCE PD volume ends up on the in-tree mechanism: the node
// says it is not migrated, or adc has the plugin's migration off.
var inTreeCases = []struct {
	name string
	opts func() adc.Options
	// csiNode writes the node's CSINode (or not).
	csiNode func(e *testEnv, node string)
	// fixHint is a part of the "how to fix it" advice the hold Event must give.
	fixHint string
}{
	{
		name:    "csinode-not-migrated",
		opts:    func() adc.Options { return adc.Options{} },
		csiNode: func(e *testEnv, node string) { e.csiNode(node, "", gceDriver) },
		fixHint: "migrate the node",
	},
	{
		name: "migration-off",
		opts: func() adc.Options {
			return adc.Options{Migration: migration.DefaultConfig().WithModes(map[string]migration.Mode{gcePlugin: migration.ModeOff})}
		},
		csiNode: func(*testEnv, string) {},
		fixHint: "--migration",
	},
}

// An in-tree GCE PD volume is attached by the host's in-tree attacher: one Attach call with
// the in-tree unique name, the volume listed in node status with the attacher's device path,
// no VolumeAttachment; once the pod is gone, the volume leaves node status and then Detach is
// called.
func TestInTreeAttach(t *testing.T) {
	for _, tc := range inTreeCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			att := e.newRecordingAttacher()
			opts := tc.opts()
			opts.InTreeAttacher = att
			ctrl := e.startController(opts)
			node := e.node("n1", true)
			tc.csiNode(e, node)
			pd := e.ns + "-disk"
			pv := e.gcePV("pd", pd, "us-central1-a")
			e.pod("app", node, []string{e.boundClaim(pv)})
			unique := gcePlugin + "/" + pd

			e.eventually("volume listed in node status with the attacher's device path", 10*time.Second,
				e.listedWithDevicePath(node, unique, devicePathOf(unique)))
			e.pairIs(ctrl.Controller, node, "app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
				return s.Mechanism == migration.MechanismInTree && s.Phase == readmodel.PhaseAttached && s.UniqueName == unique
			})
			attaches := att.callsOf("attach", node)
			if len(attaches) != 1 {
				t.Fatalf("Attach called %d times, want once: %s", len(attaches), att)
			}
			if got := attaches[0].volume; got.UniqueName != unique || got.Plugin != gcePlugin || got.PV == nil || got.PV.Name != pv.Name {
				t.Errorf("Attach got volume {plugin %q unique %q pv %v}, want plugin %q unique %q pv %s", got.Plugin, got.UniqueName, got.PV != nil, gcePlugin, unique, pv.Name)
			}
			e.consistently("no second Attach, no VolumeAttachment", 500*time.Millisecond, func() (bool, string) {
				if n := len(att.callsOf("attach", node)); n != 1 {
					return false, fmt.Sprintf("Attach called %d times: %s", n, att)
				}
				if vas := e.vasOnNode(node); len(vas) != 0 {
					return false, "VolumeAttachment " + vas[0].Name + " created for an in-tree volume"
				}
				return true, ""
			})

			e.deletePod("app")
			e.eventually("Detach called", 10*time.Second, func() (bool, string) {
				return len(att.callsOf("detach", node)) == 1, att.String()
			})
			detach := att.callsOf("detach", node)[0]
			if detach.volume.UniqueName != unique {
				t.Errorf("Detach got unique name %q, want %q", detach.volume.UniqueName, unique)
			}
			if detach.listed {
				t.Errorf("Detach called while node %s still listed %s in status.volumesAttached; it must be removed from status first", node, unique)
			}
			e.eventually("volume removed from node status", 5*time.Second, e.notListedOnNode(node, unique))
			if n := len(att.callsOf("attach", node)); n != 1 {
				t.Errorf("Attach called %d times in total, want once: %s", n, att)
			}
		})
	}
}

// Without an in-tree attacher, an in-tree volume is held (never attached a wrong way), with
// exactly one Warning Event on the pod that says how to fix it, and no VolumeAttachment.
func TestInTreeWithoutAttacher(t *testing.T) {
	for _, tc := range inTreeCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctrl := e.startController(tc.opts())
			node := e.node("n1", true)
			tc.csiNode(e, node)
			e.pod("app", node, []string{e.boundClaim(e.gcePV("pd", e.ns+"-disk", "us-central1-a"))})

			e.pairIs(ctrl.Controller, node, "app", "data-0", 10*time.Second, func(s readmodel.PairState) bool {
				return s.Mechanism == migration.MechanismInTree && s.Phase == readmodel.PhaseHeld && s.Retries >= 1
			})
			msg := e.oneWarningEvent(e.ns, "app", adc.ReasonNoInTreeAttacher, time.Second)
			for _, want := range []string{node, gcePlugin, tc.fixHint, "in-tree attacher"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Event message %q does not mention %q", msg, want)
				}
			}
			if vas := e.vasOnNode(node); len(vas) != 0 {
				t.Errorf("VolumeAttachment %s created for a held in-tree volume", vas[0].Name)
			}
			if names := e.attachedNames(node); len(names) != 0 {
				t.Errorf("node status lists %v for a held volume", names)
			}
		})
	}
}
