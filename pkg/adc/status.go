package adc

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// syncNodeStatus brings one node's status.volumesAttached in line with its attachments. It
// runs on its own queue so writes are coalesced per node: while the node still has attaches
// in flight, an addition waits (at most NodeStatusMaxDelay) so that one patch lists several
// volumes; removals, which gate detaches, are written at once.
func (c *Controller) syncNodeStatus(ctx context.Context, name string) (retryAfter time.Duration, err error) {
	logger := klog.FromContext(ctx)
	now := c.opts.Clock.Now()
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !managed(node)) {
		c.clearUnlisted(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	atts := c.actualAttachments(node, now)
	want, pending := c.volumesAttachedFor(node, atts)
	have := node.Status.VolumesAttached
	if sameVolumes(want, have) {
		c.clearUnlisted(name)
		return 0, nil
	}
	if pending > 0 && onlyAdds(want, have) {
		since := c.unlistedSince(name, now)
		if wait := c.opts.NodeStatusMaxDelay - now.Sub(since); wait > 0 {
			logger.V(4).Info("Coalescing node status update", "pendingAttaches", pending, "wait", wait)
			return wait, nil
		}
	}
	if err := c.status.PatchVolumesAttached(ctx, name, want); err != nil {
		return 0, err
	}
	c.clearUnlisted(name)
	logger.V(4).Info("Updated node status.volumesAttached", "volumes", len(want), "previously", len(have))
	return 0, nil
}

// volumesAttachedFor computes what the node's status.volumesAttached should list, and how
// many attaches of the node are still in flight.
func (c *Controller) volumesAttachedFor(node *v1.Node, atts []*attachment) ([]v1.AttachedVolume, int) {
	c.mu.Lock()
	detaching := make(map[string]bool, len(c.world.detaching[node.Name]))
	for k := range c.world.detaching[node.Name] {
		detaching[k] = true
	}
	pending := c.world.creating[node.Name]
	c.mu.Unlock()

	want := make([]v1.AttachedVolume, 0, len(atts))
	seen := make(map[string]bool, len(atts))
	keepDrivers := map[string]bool{}
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
			if a.uniqueName == "" {
				// The PV is gone, so adc cannot name the volume: keep whatever the node lists
				// for that driver rather than drop a volume that may be mounted.
				keepDrivers[a.driver] = true
				continue
			}
		}
		if a.uniqueName == "" || detaching[a.uniqueName] || seen[a.uniqueName] {
			continue
		}
		seen[a.uniqueName] = true
		av := v1.AttachedVolume{Name: v1.UniqueVolumeName(a.uniqueName)}
		if a.inTree != nil {
			av.DevicePath = a.inTree.devicePath
		}
		want = append(want, av)
	}
	for drv := range keepDrivers {
		prefix := csiUniquePrefix + drv + "^"
		for _, av := range node.Status.VolumesAttached {
			if n := string(av.Name); strings.HasPrefix(n, prefix) && !seen[n] && !detaching[n] {
				seen[n] = true
				want = append(want, av)
			}
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	return want, pending
}

func sameVolumes(a, b []v1.AttachedVolume) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[v1.UniqueVolumeName]string, len(a))
	for _, v := range a {
		m[v.Name] = v.DevicePath
	}
	for _, v := range b {
		if p, ok := m[v.Name]; !ok || p != v.DevicePath {
			return false
		}
	}
	return true
}

// onlyAdds reports whether want keeps everything have lists.
func onlyAdds(want, have []v1.AttachedVolume) bool {
	m := make(map[v1.UniqueVolumeName]bool, len(want))
	for _, v := range want {
		m[v.Name] = true
	}
	for _, v := range have {
		if !m[v.Name] {
			return false
		}
	}
	return true
}

func (c *Controller) unlistedSince(node string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.world.unlistedSince[node]
	if !ok {
		c.world.unlistedSince[node] = now
		return now
	}
	return t
}

func (c *Controller) clearUnlisted(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.world.unlistedSince, node)
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
