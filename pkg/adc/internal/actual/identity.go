package actual

import (
	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/migration"
)

// Identity is how a desired volume is found among a node's attachments: its unique volume
// name (the key), and the two names an attachment of it may carry on this node that the key
// alone cannot find: the in-tree unique name a node lists when the in-tree plugin attached it
// (before a migration flip, kubernetes#98687), and its VolumeAttachment's name (an object
// whose PersistentVolume is gone). PVName is an attribute, used only to keep the attachment of
// a pair whose decision could not name its volume (adc does not detach what it cannot name).
type Identity struct {
	Volume     string
	InTreeName string
	VA         string
	PVName     string
}

// Identify names a decided volume of the node.
func Identify(d *migration.Decision, pvName, node string) Identity {
	names := migration.NamesOf(d, node)
	return Identity{Volume: migration.VolumeName(d), InTreeName: names.InTreeUnique, VA: names.VolumeAttachment, PVName: pvName}
}

// Key is the identity as memory's ReadWriteOnce check takes it.
func (id Identity) Key() attachstate.Volume {
	return attachstate.Volume{Name: id.Volume, InTreeName: id.InTreeName}
}

// Index finds the existing attachment of a desired volume on the node.
type Index struct {
	byVolume map[string]*Attachment
	byInTree map[string]*Attachment
	byVA     map[string]*Attachment
	byPV     map[string]*Attachment
}

// NewIndex indexes a node's attachments.
func NewIndex(atts []*Attachment) Index {
	x := Index{
		byVolume: make(map[string]*Attachment, len(atts)),
		byInTree: map[string]*Attachment{},
		byVA:     make(map[string]*Attachment, len(atts)),
		byPV:     make(map[string]*Attachment, len(atts)),
	}
	for _, a := range atts {
		if a.Volume != "" {
			x.byVolume[a.Volume] = a
		}
		if a.InTree != nil {
			x.byInTree[a.UniqueName] = a
		}
		if a.VA != nil {
			x.byVA[a.VA.Name] = a
		}
		if a.PVName != "" {
			x.byPV[a.PVName] = a
		}
	}
	return x
}

// Find returns the attachment of the volume named id: by its unique volume name, else (an
// attachment that cannot name itself so) by the in-tree name or the VolumeAttachment name,
// else, for a pair that could not name its volume, one of the same PersistentVolume (the
// pair is held, and its attachment is kept).
func (x Index) Find(id Identity) *Attachment {
	if a := x.byVolume[id.Volume]; a != nil && id.Volume != "" {
		return a
	}
	if a := x.byInTree[id.InTreeName]; a != nil && id.InTreeName != "" {
		return a
	}
	if a := x.byVA[id.VA]; a != nil && id.VA != "" {
		return a
	}
	if a := x.byPV[id.PVName]; a != nil && id.PVName != "" && id.Volume == "" {
		return a
	}
	return nil
}
