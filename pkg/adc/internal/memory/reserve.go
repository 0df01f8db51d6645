package memory

// Reserve returns the node a volume is attached or attaching to, other than node, and
// records node as waiting for it; when there is none it reserves the volume (sourceKey) for
// node until its attachment shows up in the sources. inTreeUnique, when set, also finds the
// volume's in-tree attachments (a migrated volume may still be attached in-tree elsewhere).
// ReadWriteOnce attaches call it before their create, so two workers never attach one volume
// to two nodes.
func (m *Memory) Reserve(node, sourceKey, inTreeUnique string) (other string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sourceKey != "" {
		other = m.sources.nodeOtherThan(sourceKey, node)
	}
	if other == "" && inTreeUnique != "" {
		for _, n := range sortedKeys(m.inTree) {
			if _, ok := m.inTree[n][inTreeUnique]; ok && n != node {
				other = n
				break
			}
		}
	}
	if other == "" && sourceKey != "" {
		if holder := m.reservations[sourceKey]; holder != "" && holder != node {
			other = holder
		}
	}
	if other == "" && sourceKey != "" {
		expected := m.expected.bySource[sourceKey]
		for _, name := range sortedKeys(expected) {
			if e := expected[name]; e.node != node {
				other = e.node
				break
			}
		}
	}
	if other == "" {
		if sourceKey != "" {
			m.reservations[sourceKey] = node
		}
		return ""
	}
	for _, key := range []string{sourceKey, InTreeKey(inTreeUnique)} {
		if key == "" {
			continue
		}
		if m.waiters[key] == nil {
			m.waiters[key] = map[string]bool{}
		}
		m.waiters[key][node] = true
	}
	return other
}

// Release drops node's reservation of a volume.
func (m *Memory) Release(sourceKey, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(sourceKey, node)
}

func (m *Memory) releaseLocked(sourceKey, node string) {
	if m.reservations[sourceKey] == node {
		delete(m.reservations, sourceKey)
	}
}
