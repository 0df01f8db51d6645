package attachstate

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// writtenStatus is what adc last wrote to a node's status.volumesAttached, at the
// resourceVersion the write produced.
type writtenStatus struct {
	resourceVersion string
	volumes         []v1.AttachedVolume
}

// MarkDetaching asks the status worker to drop a volume from the node's status before it is
// detached. The controller marks only after the fresh read of the node that allowed the
// detach: the mark is the evidence UnprovenRemovals accepts.
func (m *State) MarkDetaching(node, unique string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.detaching[node] == nil {
		m.detaching[node] = map[string]bool{}
	}
	m.detaching[node][unique] = true
}

// PruneDetaching forgets the node's detaches whose attachment is gone (present lists the
// unique names of the attachments the node still has): they are over.
func (m *State) PruneDetaching(node string, present map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for unique := range m.detaching[node] {
		if !present[unique] {
			delete(m.detaching[node], unique)
		}
	}
	if len(m.detaching[node]) == 0 {
		delete(m.detaching, node)
	}
}

// CancelDetach is called when a volume being detached is needed again before its detach
// started: it goes back into the node's status.
func (m *State) CancelDetach(node, unique string) {
	if unique == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.detaching[node], unique)
	if len(m.detaching[node]) == 0 {
		delete(m.detaching, node)
	}
}

// SetCreating records how many CSI attaches the node's running reconcile may decide; with
// the not-yet-attached VolumeAttachments and the expected creates (queued or in flight) they
// keep its status pending.
func (m *State) SetCreating(node string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n <= 0 {
		delete(m.creating, node)
	} else {
		m.creating[node] = n
	}
}

// StatusInputs returns what the node's status list depends on besides the caches: the unique
// names being detached, and how many attaches are decided and not yet created.
func (m *State) StatusInputs(node string) (detaching map[string]bool, creating int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	detaching = make(map[string]bool, len(m.detaching[node]))
	for k := range m.detaching[node] {
		detaching[k] = true
	}
	return detaching, m.creating[node]
}

// UnprovenRemovals returns the volumes of have that kept leaves out and that memory cannot
// prove detached: no detaching mark (made after the fresh read of the node) and no in-tree
// tombstone. The status writer must read those from the API server before it drops them.
func (m *State) UnprovenRemovals(node string, kept map[v1.UniqueVolumeName]bool, have []v1.AttachedVolume) []v1.AttachedVolume {
	m.mu.Lock()
	defer m.mu.Unlock()
	var unsure []v1.AttachedVolume
	for _, v := range have {
		name := string(v.Name)
		if kept[v.Name] || m.detaching[node][name] || m.inTreeForgotten[node][name] {
			continue
		}
		unsure = append(unsure, v)
	}
	return unsure
}

// RemovesDetaching reports whether going from have to what kept holds drops a volume that is
// being detached.
func (m *State) RemovesDetaching(node string, kept map[v1.UniqueVolumeName]bool, have []v1.AttachedVolume) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range have {
		if !kept[v.Name] && m.detaching[node][string(v.Name)] {
			return true
		}
	}
	return false
}

// Wrote remembers a status write (the resourceVersion it produced) until the Node informer
// shows it.
func (m *State) Wrote(node, resourceVersion string, volumes []v1.AttachedVolume) {
	if resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written[node] = writtenStatus{resourceVersion: resourceVersion, volumes: volumes}
}

// VolumesAttachedNow is the node's status.volumesAttached as adc knows it: the informer's
// copy, or what adc last wrote when the informer has not shown that write yet (its Node
// watch may be far behind), so a status write is neither repeated nor missed because of a
// stale cache.
func (m *State) VolumesAttachedNow(node *v1.Node) []v1.AttachedVolume {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.volumesAttachedNowLocked(node)
}

func (m *State) volumesAttachedNowLocked(node *v1.Node) []v1.AttachedVolume {
	w, ok := m.written[node.Name]
	if !ok {
		return node.Status.VolumesAttached
	}
	if cmp, err := resourceversion.CompareResourceVersion(w.resourceVersion, node.ResourceVersion); err == nil && cmp > 0 {
		return w.volumes
	}
	delete(m.written, node.Name)
	return node.Status.VolumesAttached
}

// UnlistedSince returns when the node's oldest attached-but-unlisted volume was first seen,
// recording now if none was: it bounds how long coalescing may delay the node's status.
func (m *State) UnlistedSince(node string, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.unlistedSince[node]
	if !ok {
		m.unlistedSince[node] = now
		return now
	}
	return t
}

// ClearUnlisted records that the node's status lists every attached volume.
func (m *State) ClearUnlisted(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.unlistedSince, node)
}
