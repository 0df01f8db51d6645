package attachstate

import v1 "k8s.io/api/core/v1"

// NoteManaged records whether adc last saw the node with the managed annotation: a deleted
// node's VolumeAttachments are detached only if adc managed it.
func (m *State) NoteManaged(node string, managed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.managed[node] = managed
}

// WasManaged reports whether adc last saw the node managed, and whether it saw it at all.
func (m *State) WasManaged(node string) (managed, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	managed, known = m.managed[node]
	return managed, known
}

// Unmanaged drops what adc remembers for its decisions about a node it no longer manages
// (the kubelet took attach and detach back), except whether it was managed and the in-tree
// attachments its status still lists: an in-tree attachment has no API object, so memory is
// the only place another node's ReadWriteOnce check finds it, and it is still attached.
func (m *State) Unmanaged(node *v1.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := map[string]InTreeAttachment{}
	for _, av := range node.Status.VolumesAttached {
		if it, ok := m.inTree[node.Name][string(av.Name)]; ok {
			keep[string(av.Name)] = it
		}
	}
	verified := m.inTreeVerified[node.Name]
	volumes := m.inTreeVolumesLocked(node.Name)
	m.forgetNodeLocked(node.Name)
	if len(keep) > 0 {
		m.inTree[node.Name] = keep
		m.inTreeVerified[node.Name] = verified
	}
	for _, v := range volumes {
		m.pruneDetachVolumeLocked(v)
	}
}

func (m *State) forgetNodeLocked(node string) {
	delete(m.inTree, node)
	delete(m.inTreeVerified, node)
	delete(m.inTreeForgotten, node)
	delete(m.detaching, node)
	delete(m.creating, node)
	delete(m.unlistedSince, node)
	delete(m.written, node)
	delete(m.held, node)
	delete(m.events, node)
}

// ForgetGoneNode drops everything remembered about a deleted node that has no attachment left.
func (m *State) ForgetGoneNode(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	volumes := m.inTreeVolumesLocked(node)
	m.forgetNodeLocked(node)
	delete(m.managed, node)
	for _, v := range volumes {
		m.pruneDetachVolumeLocked(v)
	}
}

// inTreeVolumesLocked lists the volumes of the node's in-tree attachments.
func (m *State) inTreeVolumesLocked(node string) []string {
	var out []string
	for _, it := range m.inTree[node] {
		out = append(out, m.volumeOfInTreeLocked(it))
	}
	return out
}
