package memory

// NoteManaged records whether adc last saw the node with the managed annotation: a deleted
// node's VolumeAttachments are detached only if adc managed it.
func (m *Memory) NoteManaged(node string, managed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.managed[node] = managed
}

// WasManaged reports whether adc last saw the node managed, and whether it saw it at all.
func (m *Memory) WasManaged(node string) (managed, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	managed, known = m.managed[node]
	return managed, known
}

// ForgetNode drops everything remembered about a node that adc no longer manages, except
// whether it was managed (ForgetGoneNode drops that once a deleted node has nothing left).
func (m *Memory) ForgetNode(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetNodeLocked(node)
}

func (m *Memory) forgetNodeLocked(node string) {
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
func (m *Memory) ForgetGoneNode(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetNodeLocked(node)
	delete(m.managed, node)
}
