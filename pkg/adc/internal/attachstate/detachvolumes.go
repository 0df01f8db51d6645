package attachstate

import "github.com/migration-aware/adc/pkg/migration"

// What a DetachPolicy selects an attached volume by (its StorageClass, driver and plugin) is
// learned from the pods that use it. An attachment cannot always tell it again by itself: an
// in-tree attachment learned from node status after a restart has no PersistentVolume, and a
// VolumeAttachment whose PersistentVolume was deleted has no class. Memory keeps what a pod
// said for such a volume, by its unique name, for as long as it is attached somewhere, so the
// detach side asks the rule the pod side asked.

// NoteDetachVolume records what policies select the volume by, as a pod using it says.
func (m *State) NoteDetachVolume(volume string, v migration.DetachVolume) {
	if volume == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.detachVolumes[volume] = v
}

// DetachVolume returns what a pod said policies select the volume by, if one did while the
// volume was attached.
func (m *State) DetachVolume(volume string) (migration.DetachVolume, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.detachVolumes[volume]
	return v, ok
}

// pruneDetachVolumeLocked forgets what was noted for a volume once nothing attaches it.
func (m *State) pruneDetachVolumeLocked(volume string) {
	if _, ok := m.detachVolumes[volume]; !ok || volume == "" {
		return
	}
	if len(m.sources.byVolume.Values(volume)) > 0 || len(m.expected.byVolume[volume]) > 0 {
		return
	}
	for _, byName := range m.inTree {
		for _, it := range byName {
			if m.volumeOfInTreeLocked(it) == volume {
				return
			}
		}
	}
	delete(m.detachVolumes, volume)
}
