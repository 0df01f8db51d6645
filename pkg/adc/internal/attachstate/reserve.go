package attachstate

import "sort"

// Volume names a volume for the ReadWriteOnce check: its unique volume name
// (migration.VolumeName), the one key of reservations, waiters and the VolumeAttachment
// sources, and the in-tree unique name under which a node lists it when its in-tree plugin
// attached it ("" when it has none): an in-tree attachment is found under that name, the
// only one node status gives it.
type Volume struct {
	Name       string
	InTreeName string
}

// Reserve returns the node a volume is attached or attaching to, other than node, and
// records node as waiting for it; when there is none it reserves the volume for node until
// its attachment shows up in the sources. ReadWriteOnce attaches call it before their
// create, so two workers never attach one volume to two nodes, whatever PersistentVolume or
// mechanism names it.
func (m *State) Reserve(node string, v Volume) (other string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v.Name == "" {
		return ""
	}
	if m.sources.unnamedLen() > 0 {
		m.sources.rename(m.opts.Volumes)
	}
	other = m.sources.nodeOtherThan(v.Name, node)
	if other == "" {
		other = m.inTreeNodeOtherThanLocked(v, node)
	}
	if other == "" {
		if holder := m.reservations[v.Name]; holder != "" && holder != node {
			other = holder
		}
	}
	if other == "" {
		expected := m.expected.byVolume[v.Name]
		for _, name := range sortedKeys(expected) {
			if e := expected[name]; e.node != node {
				other = e.node
				break
			}
		}
	}
	if other == "" {
		m.reservations[v.Name] = node
		return ""
	}
	w := m.waiters[v.Name]
	if w == nil {
		w = &waiting{nodes: map[string]bool{}}
		m.waiters[v.Name] = w
	}
	w.nodes[node] = true
	if v.InTreeName != "" && v.InTreeName != v.Name {
		w.inTreeName = v.InTreeName
	}
	return other
}

// inTreeNodeOtherThanLocked returns a node other than node with an in-tree attachment of v.
func (m *State) inTreeNodeOtherThanLocked(v Volume, node string) string {
	var nodes []string
	for n, byName := range m.inTree {
		if n == node {
			continue
		}
		for unique, it := range byName {
			if (v.InTreeName != "" && unique == v.InTreeName) || (it.Volume.Name != "" && it.Volume.Name == v.Name) {
				nodes = append(nodes, n)
				break
			}
		}
	}
	if len(nodes) == 0 {
		return ""
	}
	sort.Strings(nodes)
	return nodes[0]
}

// Release drops node's reservation of a volume (an in-tree attach that failed) and returns
// the nodes that waited for it: they may attach the volume now.
func (m *State) Release(volume, node string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.releaseLocked(volume, node) {
		return nil
	}
	return m.takeWaitersLocked(volume)
}

// releaseLocked drops node's reservation of the volume and reports whether it had one.
func (m *State) releaseLocked(volume, node string) bool {
	if volume == "" || m.reservations[volume] != node {
		return false
	}
	delete(m.reservations, volume)
	return true
}

// pruneWaitersLocked forgets node as a waiter of every volume but those of waitingFor: its
// last reconcile no longer waits for them (the pod left, the volume was attached), so
// nothing is kept for a wait that is over.
func (m *State) pruneWaitersLocked(node string, waitingFor map[string]bool) {
	for volume, w := range m.waiters {
		if w.nodes[node] && !waitingFor[volume] {
			delete(w.nodes, node)
			if len(w.nodes) == 0 {
				delete(m.waiters, volume)
			}
		}
	}
}
