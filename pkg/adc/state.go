package adc

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The helpers below change the controller's memory (world) under its lock; the reconcile
// code calls them between API calls, never holding the lock across one.

// reserveVolume returns the node a ReadWriteOnce volume is attached or attaching to, other
// than node; when there is none it reserves the volume for node until its attachment shows
// up in the cache.
func (c *Controller) reserveVolume(p *pair, node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	other := ""
	if p.ids.sourceKey != "" {
		other = c.world.vaSources.nodeOtherThan(p.ids.sourceKey, node)
	}
	if other == "" && p.ids.inTreeUnique != "" {
		for n, m := range c.world.inTree {
			if _, ok := m[p.ids.inTreeUnique]; ok && n != node {
				other = n
				break
			}
		}
	}
	if other == "" && p.ids.sourceKey != "" {
		if holder := c.world.reservations[p.ids.sourceKey]; holder != "" && holder != node {
			other = holder
		}
	}
	if other == "" && p.ids.sourceKey != "" {
		for _, e := range c.world.expectedVAs.ofSource(p.ids.sourceKey) {
			if e.node != node {
				other = e.va.Spec.NodeName
				break
			}
		}
	}
	if other == "" {
		if p.ids.sourceKey != "" {
			c.world.reservations[p.ids.sourceKey] = node
		}
		return ""
	}
	for _, key := range []string{p.ids.sourceKey, inTreeKey(p.ids.inTreeUnique)} {
		if key == "" {
			continue
		}
		if c.world.waiters[key] == nil {
			c.world.waiters[key] = map[string]bool{}
		}
		c.world.waiters[key][node] = true
	}
	return other
}

func inTreeKey(unique string) string {
	if unique == "" {
		return ""
	}
	return "intree:" + unique
}

// release drops node's reservation of a volume.
func (c *Controller) release(sourceKey, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.world.reservations[sourceKey] == node {
		delete(c.world.reservations, sourceKey)
	}
}

func (c *Controller) decCreating(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.world.creating[node] > 0 {
		c.world.creating[node]--
	}
}

func (c *Controller) recordInTree(node string, vol InTreeVolume, devicePath string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addInTreeLocked(node, inTreeAttachment{volume: vol, devicePath: devicePath})
}

func (c *Controller) addInTreeLocked(node string, it inTreeAttachment) {
	if c.world.inTree[node] == nil {
		c.world.inTree[node] = map[string]inTreeAttachment{}
		// Verified from now on, every InTreeVerifyPeriod (verifyInTree).
		c.world.inTreeVerified[node] = c.opts.Clock.Now()
	}
	c.world.inTree[node][it.volume.UniqueName] = it
	delete(c.world.inTreeForgotten[node], it.volume.UniqueName)
}

// forgetInTree drops an in-tree attachment that is detached (adc detached it, or the attacher
// reports it detached) and returns the nodes waiting for it. Node status may still list it
// until the status worker's next write: it is not learned again from that.
func (c *Controller) forgetInTree(node, unique string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.world.inTree[node][unique]; !ok {
		return nil
	}
	delete(c.world.inTree[node], unique)
	if len(c.world.inTree[node]) == 0 {
		delete(c.world.inTree, node)
		delete(c.world.inTreeVerified, node)
	}
	delete(c.world.detaching[node], unique)
	if c.world.inTreeForgotten[node] == nil {
		c.world.inTreeForgotten[node] = map[string]bool{}
	}
	c.world.inTreeForgotten[node][unique] = true
	return c.takeWaitersLocked(inTreeKey(unique))
}

// learnInTreeLocked adds to memory the in-tree volumes node status lists that adc does not
// know: attached by another controller (a previous leader) or missing from an older read of
// the node. It reads status as adc knows it (volumesAttachedNowLocked: adc's own last write
// while the informer has not shown it). A volume adc dropped itself is not learned again from
// a status that still lists it; that tombstone goes once status no longer lists it.
func (c *Controller) learnInTreeLocked(node *v1.Node) {
	have := c.volumesAttachedNowLocked(node)
	forgotten := c.world.inTreeForgotten[node.Name]
	var listed map[string]bool
	if len(forgotten) > 0 {
		listed = make(map[string]bool, len(have))
	}
	for _, av := range have {
		name := string(av.Name)
		if strings.HasPrefix(name, csiUniquePrefix) {
			continue
		}
		if listed != nil {
			listed[name] = true
		}
		if forgotten[name] {
			continue
		}
		if _, known := c.world.inTree[node.Name][name]; known {
			continue
		}
		c.addInTreeLocked(node.Name, inTreeAttachment{
			volume:     InTreeVolume{Plugin: pluginOfUniqueName(name), UniqueName: name},
			devicePath: av.DevicePath,
		})
	}
	for name := range forgotten {
		if !listed[name] {
			delete(forgotten, name)
		}
	}
	if len(forgotten) == 0 {
		delete(c.world.inTreeForgotten, node.Name)
	}
}

// markDetaching asks the status worker to drop a volume from the node's status before it is
// detached.
func (c *Controller) markDetaching(node, unique string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.world.detaching[node] == nil {
		c.world.detaching[node] = map[string]bool{}
	}
	c.world.detaching[node][unique] = true
}

// pruneDetaching forgets detaches whose attachment is gone: they are over.
func (c *Controller) pruneDetaching(node string, atts []*attachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.world.detaching[node]) == 0 {
		return
	}
	present := make(map[string]bool, len(atts))
	for _, a := range atts {
		present[a.uniqueName] = true
	}
	for unique := range c.world.detaching[node] {
		if !present[unique] {
			delete(c.world.detaching[node], unique)
		}
	}
}

// cancelDetach is called when a volume being detached is needed again before its detach
// started: it goes back into the node's status.
func (c *Controller) cancelDetach(node, unique string) {
	if unique == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.world.detaching[node], unique)
}

// forgetNode drops everything remembered about a node that adc no longer manages.
func (c *Controller) forgetNode(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.world.inTree, node)
	delete(c.world.inTreeVerified, node)
	delete(c.world.inTreeForgotten, node)
	delete(c.world.detaching, node)
	delete(c.world.creating, node)
	delete(c.world.unlistedSince, node)
	delete(c.world.written, node)
	delete(c.world.held, node)
	delete(c.world.events, node)
	c.flips.forget(node)
}

// noteManaged records whether adc last saw the node with the managed annotation.
func (c *Controller) noteManaged(node string, managed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.world.managed[node] = managed
}

// wasManaged reports whether adc last saw the node managed, and whether it saw it at all.
func (c *Controller) wasManaged(node string) (managed, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	managed, known = c.world.managed[node]
	return managed, known
}

// forgetGoneNode drops everything remembered about a deleted node that has no attachment left.
func (c *Controller) forgetGoneNode(node string) {
	c.forgetNode(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.world.managed, node)
}
