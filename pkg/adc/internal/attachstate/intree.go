package attachstate

import (
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// InTreeVolume is a volume attached with an in-tree plugin; the controller's in-tree attacher
// boundary takes it.
type InTreeVolume struct {
	// Plugin is the in-tree plugin name, for example kubernetes.io/gce-pd.
	Plugin string
	// UniqueName is <plugin>/<volume id>, the name listed in Node status.volumesAttached.
	UniqueName string
	// Name is the volume's unique volume name (migration.VolumeName: the translated CSI
	// name of a migratable plugin's volume) when adc decided it; empty for an attachment
	// learned from node status, which names only UniqueName.
	Name string
	// PV is the PersistentVolume, for PV-backed volumes.
	PV *v1.PersistentVolume
	// Inline is the pod's volume, for inline volumes.
	Inline *v1.Volume
}

// InTreeAttachment is an in-tree attachment adc holds: in-tree attachments have no API
// object, so memory is where they are.
type InTreeAttachment struct {
	Volume     InTreeVolume
	DevicePath string
}

// InTreeAttached records an in-tree attach that succeeded and ends the node's reservation of
// the volume (vol.Name) in the same step: the attachment holds the volume from then on.
// Released first and recorded after, a second node's Reserve could find the volume held by
// neither and attach a ReadWriteOnce volume twice.
func (m *State) InTreeAttached(node string, vol InTreeVolume, devicePath string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addInTreeLocked(node, InTreeAttachment{Volume: vol, DevicePath: devicePath})
	m.releaseLocked(vol.Name, node)
}

func (m *State) addInTreeLocked(node string, it InTreeAttachment) {
	if m.inTree[node] == nil {
		m.inTree[node] = map[string]InTreeAttachment{}
		// Verified from now on, every verify period (InTreeDue).
		m.inTreeVerified[node] = m.opts.Clock.Now()
	}
	m.inTree[node][it.Volume.UniqueName] = it
	delete(m.inTreeForgotten[node], it.Volume.UniqueName)
	if len(m.inTreeForgotten[node]) == 0 {
		delete(m.inTreeForgotten, node)
	}
}

// ForgetInTree drops an in-tree attachment that is detached (adc detached it, or the attacher
// reports it detached) and returns the nodes waiting for it. Node status may still list it
// until the status worker's next write: it is not learned again from that (a tombstone).
func (m *State) ForgetInTree(node, unique string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.inTree[node][unique]
	if !ok {
		return nil
	}
	volume := m.volumeOfInTreeLocked(it)
	delete(m.inTree[node], unique)
	if len(m.inTree[node]) == 0 {
		delete(m.inTree, node)
		delete(m.inTreeVerified, node)
	}
	delete(m.detaching[node], unique)
	if m.inTreeForgotten[node] == nil {
		m.inTreeForgotten[node] = map[string]bool{}
	}
	m.inTreeForgotten[node][unique] = true
	m.pruneDetachVolumeLocked(volume)
	return m.takeWaitersLocked(volume)
}

// learnInTreeLocked adds the in-tree volumes node status lists that adc does not know:
// attached by another controller (a previous leader) or missing from an older read of the
// node. It reads status as adc knows it (volumesAttachedNowLocked: adc's own last write while
// the informer has not shown it). A volume adc dropped itself is not learned again from a
// status that still lists it; that tombstone goes once status no longer lists it.
func (m *State) learnInTreeLocked(node *v1.Node) {
	have := m.volumesAttachedNowLocked(node)
	forgotten := m.inTreeForgotten[node.Name]
	var listed map[string]bool
	if len(forgotten) > 0 {
		listed = make(map[string]bool, len(have))
	}
	for _, av := range have {
		name := string(av.Name)
		if migration.IsCSIUniqueName(name) {
			continue
		}
		if listed != nil {
			listed[name] = true
		}
		if forgotten[name] {
			continue
		}
		if _, known := m.inTree[node.Name][name]; known {
			continue
		}
		m.addInTreeLocked(node.Name, InTreeAttachment{
			Volume:     InTreeVolume{Plugin: pluginOfUniqueName(name), UniqueName: name},
			DevicePath: av.DevicePath,
		})
	}
	for name := range forgotten {
		if !listed[name] {
			delete(forgotten, name)
		}
	}
	if len(forgotten) == 0 {
		delete(m.inTreeForgotten, node.Name)
	}
}

// pluginOfUniqueName returns the plugin part (<vendor>/<plugin>) of an in-tree unique name.
func pluginOfUniqueName(name string) string {
	first := strings.IndexByte(name, '/')
	if first < 0 {
		return name
	}
	second := strings.IndexByte(name[first+1:], '/')
	if second < 0 {
		return name
	}
	return name[:first+1+second]
}

// InTreeOf returns the node's in-tree attachments, by unique name order.
func (m *State) InTreeOf(node string) []InTreeAttachment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inTreeOfLocked(node)
}

func (m *State) inTreeOfLocked(node string) []InTreeAttachment {
	out := make([]InTreeAttachment, 0, len(m.inTree[node]))
	for _, it := range m.inTree[node] {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Volume.UniqueName < out[j].Volume.UniqueName })
	return out
}

// InTreeDue returns the node's in-tree volumes to verify with the attacher now, and marks
// them verified; or, when they were verified less than period ago, how long until they are
// due. Both are empty when the node has no in-tree attachment.
func (m *State) InTreeDue(node string, now time.Time, period time.Duration) ([]InTreeVolume, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.inTree[node]) == 0 {
		return nil, 0
	}
	if due := m.inTreeVerified[node].Add(period).Sub(now); due > 0 {
		return nil, due
	}
	m.inTreeVerified[node] = now
	vols := make([]InTreeVolume, 0, len(m.inTree[node]))
	for _, it := range m.inTreeOfLocked(node) {
		vols = append(vols, it.Volume)
	}
	return vols, 0
}
