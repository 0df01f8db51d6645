package attachstate

import (
	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/multimap"
	"github.com/migration-aware/adc/pkg/migration"
)

// vaSources finds the VolumeAttachments of one volume on any node, for the ReadWriteOnce
// multi-attach check, by the volume's unique name (migration.VolumeOfAttachment): two
// PersistentVolumes of one disk, or a PersistentVolume re-created while the old one's
// VolumeAttachment still exists, are one volume here. An object whose volume could not be
// named when it was observed (its PersistentVolume gone or not cached yet) is kept apart,
// by object name, and recognised exactly by migration.VolumeAttachmentIsFor.
//
// It is filled, together with the create expectations, by every piece of evidence that a
// VolumeAttachment exists (observeLocked): the event handler, and the informer's store when
// the expectation checker or a returning create finds the object there before its handler
// ran. Workers start only once the handler has seen every VolumeAttachment listed at start-up.
type vaSources struct {
	byVolume multimap.Map[string, vaOnNode]
	// volumeOf is the volume each recorded object was filed under, so that its removal
	// finds it after its PersistentVolume is gone.
	volumeOf map[string]string
	// unnamed are the objects whose volume was unknown when observed.
	unnamed map[string]*storagev1.VolumeAttachment
}

func newVASources() vaSources {
	return vaSources{
		byVolume: multimap.New[string, vaOnNode](),
		volumeOf: map[string]string{},
		unnamed:  map[string]*storagev1.VolumeAttachment{},
	}
}

// vaOnNode is one VolumeAttachment of a volume.
type vaOnNode struct{ name, node string }

// add records va under its volume (named with pvs); an object known already keeps the
// volume it was filed under.
func (s vaSources) add(va *storagev1.VolumeAttachment, pvs migration.PVIdentityLookup) {
	if _, ok := s.volumeOf[va.Name]; ok {
		return
	}
	if _, ok := s.unnamed[va.Name]; ok {
		return
	}
	volume, ok := migration.VolumeOfAttachment(va, pvs)
	if !ok {
		s.unnamed[va.Name] = va
		return
	}
	s.volumeOf[va.Name] = volume
	s.byVolume.Add(volume, vaOnNode{name: va.Name, node: va.Spec.NodeName})
}

// remove forgets the object recorded under va's name and returns the volume it was filed
// under ("" when it was unnamed or not recorded).
func (s vaSources) remove(va *storagev1.VolumeAttachment) string {
	if u, ok := s.unnamed[va.Name]; ok {
		delete(s.unnamed, va.Name)
		return volumeOfUnnamed(u)
	}
	volume, ok := s.volumeOf[va.Name]
	if !ok {
		return ""
	}
	delete(s.volumeOf, va.Name)
	s.byVolume.Remove(volume, vaOnNode{name: va.Name, node: va.Spec.NodeName})
	return volume
}

// volumeOfUnnamed names an unnamed object's volume where its own spec can (an inline one);
// otherwise "".
func volumeOfUnnamed(va *storagev1.VolumeAttachment) string {
	v, _ := migration.VolumeOfAttachment(va, nil)
	return v
}

// has reports whether va is recorded on its node.
func (s vaSources) has(va *storagev1.VolumeAttachment) bool {
	if u, ok := s.unnamed[va.Name]; ok {
		return u.Spec.NodeName == va.Spec.NodeName
	}
	volume, ok := s.volumeOf[va.Name]
	if !ok {
		return false
	}
	for _, v := range s.byVolume.Values(volume) {
		if v.name == va.Name && v.node == va.Spec.NodeName {
			return true
		}
	}
	return false
}

// rename files the unnamed objects whose volume pvs names now (their PersistentVolume was
// not cached yet when they were observed, as at start-up, when the informers fill side by
// side); those it still cannot name stay apart.
func (s vaSources) rename(pvs migration.PVIdentityLookup) {
	for name, va := range s.unnamed {
		if volume, ok := migration.VolumeOfAttachment(va, pvs); ok {
			delete(s.unnamed, name)
			s.volumeOf[name] = volume
			s.byVolume.Add(volume, vaOnNode{name: name, node: va.Spec.NodeName})
		}
	}
}

// nodeOtherThan returns a node other than node that has a VolumeAttachment of the volume.
func (s vaSources) nodeOtherThan(volume, node string) string {
	for _, v := range s.byVolume.Values(volume) {
		if v.node != node {
			return v.node
		}
	}
	for _, va := range s.unnamed {
		if va.Spec.NodeName != node && migration.VolumeAttachmentIsFor(va, volume) {
			return va.Spec.NodeName
		}
	}
	return ""
}

// isOf reports whether the recorded object named name attaches volume.
func (s vaSources) isOf(name, volume string) bool {
	if v, ok := s.volumeOf[name]; ok {
		return v == volume
	}
	if u, ok := s.unnamed[name]; ok {
		return migration.VolumeAttachmentIsFor(u, volume)
	}
	return false
}

// len counts the recorded objects.
func (s vaSources) len() int { return len(s.volumeOf) + len(s.unnamed) }

// unnamedLen counts the objects whose volume could not be named.
func (s vaSources) unnamedLen() int { return len(s.unnamed) }

// addAs records va under volume, the name adc decided it for (its own create).
func (s vaSources) addAs(va *storagev1.VolumeAttachment, volume string) {
	if _, ok := s.volumeOf[va.Name]; ok {
		return
	}
	delete(s.unnamed, va.Name)
	s.volumeOf[va.Name] = volume
	s.byVolume.Add(volume, vaOnNode{name: va.Name, node: va.Spec.NodeName})
}
