package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/simulator"
)

// countingStatus wraps the node status write boundary and counts patches per node.
type countingStatus struct {
	inner volumeattach.StatusWriter

	mu      sync.Mutex
	patches map[string]int
}

func (c *countingStatus) PatchVolumesAttached(ctx context.Context, node string, vols []v1.AttachedVolume) (*v1.Node, error) {
	c.mu.Lock()
	if c.patches == nil {
		c.patches = map[string]int{}
	}
	c.patches[node]++
	c.mu.Unlock()
	return c.inner.PatchVolumesAttached(ctx, node, vols)
}

func (c *countingStatus) count(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patches[node]
}

// A node without the controller-managed-attach-detach annotation is left alone: its pod's
// CSI volume gets no VolumeAttachment, its status is never written, and the snapshot has
// nothing for it. A managed node in the same cluster shows the controller is at work.
func TestUnannotatedNodeUntouched(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("um")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver}})
	status := &countingStatus{inner: &volumeattach.ClientStatusWriter{Client: e.client}}
	ctrl := e.startController(adc.Options{NodeStatus: status})
	unmanaged := e.node("self", false)
	managed := e.node("adc", true)
	rv := e.nodeObj(unmanaged).ResourceVersion

	e.pod("mine", unmanaged, []string{e.boundClaim(e.csiPV("mine", driver, "h-mine"))})
	e.attachedCSI("theirs", managed, driver, "h-theirs")
	if status.count(managed) == 0 {
		t.Fatalf("the managed node's status was never patched through the write boundary")
	}
	e.consistently("unmanaged node untouched", time.Second, func() (bool, string) {
		if vas := e.vasOnNode(unmanaged); len(vas) != 0 {
			return false, "VolumeAttachment " + vas[0].Name + " created on an unmanaged node"
		}
		if n := status.count(unmanaged); n != 0 {
			return false, fmt.Sprintf("%d status patches sent for the unmanaged node", n)
		}
		if n := e.nodeObj(unmanaged); n.ResourceVersion != rv || len(n.Status.VolumesAttached) != 0 {
			return false, fmt.Sprintf("unmanaged node written: resourceVersion %s (was %s), volumesAttached %v", n.ResourceVersion, rv, n.Status.VolumesAttached)
		}
		if s := nodeSnapshot(ctrl.Controller, unmanaged); len(s) != 0 {
			return false, fmt.Sprintf("snapshot has entries for the unmanaged node: %+v", s)
		}
		return true, ""
	})
}
