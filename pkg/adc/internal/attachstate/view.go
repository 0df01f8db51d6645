package attachstate

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// NodeView is a node's actual attachments as one consistent read: the VolumeAttachment store
// and the creates it does not show yet, read in one step under the lock, and the node's
// in-tree attachments.
type NodeView struct {
	// VolumeAttachments are the store's, then the expected ones it does not hold, by name.
	VolumeAttachments []ViewedVA
	// InTree are the node's in-tree attachments, by unique name.
	InTree []InTreeAttachment
}

// ViewedVA is one VolumeAttachment of a NodeView.
type ViewedVA struct {
	VA *storagev1.VolumeAttachment
	// DeleteRequested: adc sent the delete of this very object.
	DeleteRequested bool
	// Volume is the unique name of the volume memory filed the object under (the one adc
	// decided when it created it, or the one its PersistentVolume named when observed);
	// empty when memory could not name it.
	Volume string
}

// NodeAttachments reads the node's actual attachments. The store is read under the lock: the
// informer updates its store before it calls the handler that ends a create expectation
// (under the same lock), so a VolumeAttachment the informer delivers meanwhile is either in
// this read of the store or still expected, never in neither. It first learns the in-tree
// volumes the node's status lists that memory does not hold (learnInTreeLocked).
func (m *State) NodeAttachments(node *v1.Node) NodeView {
	m.mu.Lock()
	defer m.mu.Unlock()
	stored := m.opts.Store.VolumeAttachmentsOnNode(node.Name)
	view := NodeView{VolumeAttachments: make([]ViewedVA, 0, len(stored))}
	seen := make(map[string]bool, len(stored))
	for _, va := range stored {
		seen[va.Name] = true
		view.VolumeAttachments = append(view.VolumeAttachments, ViewedVA{VA: va, DeleteRequested: m.deleteRequestedLocked(va), Volume: m.sources.volumeOf[va.Name]})
	}
	// In name order, so a node's decisions (and their API calls) come in the same order for
	// the same state.
	expected := m.expected.byNode[node.Name]
	names := make([]string, 0, len(expected))
	for name := range expected {
		if !seen[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		e := expected[name]
		view.VolumeAttachments = append(view.VolumeAttachments, ViewedVA{VA: e.va, DeleteRequested: m.deleteRequestedLocked(e.va), Volume: e.volume})
	}
	m.learnInTreeLocked(node)
	view.InTree = m.inTreeOfLocked(node.Name)
	return view
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
