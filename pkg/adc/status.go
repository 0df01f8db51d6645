package adc

import (
	"context"
	"hash/fnv"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// syncNodeStatus brings one node's status.volumesAttached in line with its attachments. It
// runs on its own queue, which coalesces writes per node by itself: a node is written at once
// when no write of it is in flight, and whatever changes while one is in flight is listed by
// the next write (the queue holds the node's key until the running write is done). Under
// load this batches several volumes into one patch; otherwise a volume waits one round trip.
// An addition waits for the node's pending attaches only while the client budget is spent
// (APIBudget), or always with NodeStatusMaxDelay set: see statusDelay.
func (c *Controller) syncNodeStatus(ctx context.Context, name string) (retryAfter time.Duration, err error) {
	logger := klog.FromContext(ctx)
	defer c.lockNodeStatus(name)()
	now := c.opts.Clock.Now()
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !migration.IsManagedNode(node)) {
		c.mem.ClearUnlisted(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	atts := c.actualAttachments(node)
	have := c.mem.VolumesAttachedNow(node)
	want, pending := c.volumesAttachedFor(node, have, atts)
	if want, err = c.confirmRemovals(ctx, node.Name, want, have); err != nil {
		return 0, err
	}
	if volumeattach.SameVolumes(want, have) {
		c.mem.ClearUnlisted(name)
		return 0, nil
	}
	if delay, recheck := c.statusDelay(); delay > 0 && pending > 0 && volumeattach.OnlyAdds(want, have) {
		since := c.mem.UnlistedSince(name, now)
		if wait := delay - now.Sub(since); wait > 0 {
			logger.V(4).Info("Coalescing node status update", "pendingAttaches", pending, "wait", wait)
			return min(wait, recheck), nil
		}
	}
	patched, err := c.status.PatchVolumesAttached(ctx, name, want)
	if err != nil {
		return 0, err
	}
	if patched != nil {
		c.mem.Wrote(name, patched.ResourceVersion, want)
	}
	c.mem.ClearUnlisted(name)
	if c.mem.RemovesDetaching(name, volumeattach.VolumeSet(want), have) {
		// A removal that gates a detach is written: the detach can go on now, without waiting
		// for the Node watch to bring the write back (it may be late; the detach itself reads
		// the node fresh).
		c.enqueueNode(name)
	}
	logger.V(4).Info("Updated node status.volumesAttached", "volumes", len(want), "previously", len(have))
	return 0, nil
}

// saturatedStatusDelay bounds how long a newly attached volume waits for its node's pending
// attaches while the client budget is spent. Then every status patch costs a
// VolumeAttachment create its turn, and a volume already waits seconds for the budget.
const saturatedStatusDelay = time.Second

// statusDelay is how long a node's additions may wait for its pending attaches now, and when
// to look again: the configured NodeStatusMaxDelay; else, while the API budget is spent,
// saturatedStatusDelay, looking again as soon as the budget has a token (a write then goes
// at once); else nothing (written at once).
func (c *Controller) statusDelay() (delay, recheck time.Duration) {
	if c.opts.NodeStatusMaxDelay > 0 {
		return c.opts.NodeStatusMaxDelay, c.opts.NodeStatusMaxDelay
	}
	if c.opts.APIBudget != nil {
		if spent, refill := c.opts.APIBudget.Saturated(); spent {
			return saturatedStatusDelay, max(refill, time.Millisecond)
		}
	}
	return 0, 0
}

// volumesAttachedFor computes what the node's status.volumesAttached should list, given what
// it lists now (have), and how many attaches of the node are still in flight.
func (c *Controller) volumesAttachedFor(node *v1.Node, have []v1.AttachedVolume, atts []*attachment) ([]v1.AttachedVolume, int) {
	detaching, pending := c.mem.StatusInputs(node.Name)

	want := make([]v1.AttachedVolume, 0, len(atts))
	seen := make(map[string]bool, len(atts))
	for _, a := range atts {
		if a.va != nil {
			if a.deleting {
				continue
			}
			if !a.attached {
				if a.va.Status.AttachError == nil {
					pending++
				}
				continue
			}
		}
		if a.uniqueName == "" || detaching[a.uniqueName] || seen[a.uniqueName] {
			continue
		}
		seen[a.uniqueName] = true
		av := v1.AttachedVolume{Name: v1.UniqueVolumeName(a.uniqueName)}
		if a.inTree != nil {
			av.DevicePath = a.inTree.DevicePath
		}
		want = append(want, av)
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, pending
}

// confirmRemovals returns want, adding back every volume that have lists, want drops, and
// nothing proves detached. A removal is proven by adc's own decisions (a volume being
// detached, marked after a fresh read of the node; an in-tree attachment adc detached or its
// attacher reported detached) or, for a CSI volume, by the API server: its VolumeAttachment,
// read fresh, is gone or not attached. A VolumeAttachment missing from adc's cache is not
// proof: the cache may lag (a watch gap, a relist, a slow handler).
func (c *Controller) confirmRemovals(ctx context.Context, node string, want, have []v1.AttachedVolume) ([]v1.AttachedVolume, error) {
	unsure := c.mem.UnprovenRemovals(node, volumeattach.VolumeSet(want), have)
	if len(unsure) == 0 {
		return want, nil
	}
	logger := klog.FromContext(ctx)
	for _, v := range unsure {
		attached, err := volumeattach.AttachedInAPI(ctx, c.client, node, string(v.Name))
		if err != nil {
			return nil, err
		}
		if attached {
			logger.V(2).Info("Keeping volume in node status: adc's cache does not show its attachment but the API server does", "uniqueName", v.Name)
			want = append(want, v)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, nil
}

// statusLockStripes is how many locks the nodes' status locks are spread over.
const statusLockStripes = 1024

// lockNodeStatus locks a node's status writes against its detach decisions and returns the
// unlock. A status write (compute and patch) and a run's detach decisions (fresh read, then
// marking volumes detaching) never overlap for one node. Nodes share stripes, so memory does
// not grow with the cluster; a detach decision is two API calls, rare next to writes.
func (c *Controller) lockNodeStatus(node string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	mu := &c.statusLocks[h.Sum32()%statusLockStripes]
	mu.Lock()
	return mu.Unlock
}
