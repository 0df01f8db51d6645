package adc

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
	if c.world.inTree[node] == nil {
		c.world.inTree[node] = map[string]inTreeAttachment{}
	}
	c.world.inTree[node][vol.UniqueName] = inTreeAttachment{volume: vol, devicePath: devicePath}
}

// forgetInTree drops a detached in-tree attachment and returns the nodes waiting for it.
func (c *Controller) forgetInTree(node, unique string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.world.inTree[node], unique)
	delete(c.world.detaching[node], unique)
	return c.takeWaitersLocked(inTreeKey(unique))
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
	delete(c.world.inTreeSeeded, node)
	delete(c.world.detaching, node)
	delete(c.world.creating, node)
	delete(c.world.unlistedSince, node)
	delete(c.world.written, node)
	c.flips.forget(node)
	for k := range c.world.held {
		if k.node == node {
			delete(c.world.held, k)
		}
	}
}
