package actual

import (
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// Identity is every name under which an attachment of a desired volume may exist on the
// node, whatever mechanism made it: a node that flipped between in-tree and CSI keeps the
// attachment it has (kubernetes#98687).
type Identity struct {
	VA           string // VolumeAttachment name on the CSI path
	CSIUnique    string // kubernetes.io/csi/<driver>^<handle>
	InTreeUnique string // <plugin>/<volume id>
	SourceKey    string // node-independent: pv:<name> or inline:<driver>^<handle>
}

// Identify names a decided volume of the node under every mechanism (migration.NamesOf) and
// by its source, the key memory reserves ReadWriteOnce volumes under.
func Identify(d *migration.Decision, pvName, node string) Identity {
	names := migration.NamesOf(d, node)
	id := Identity{VA: names.VolumeAttachment, CSIUnique: names.CSIUnique, InTreeUnique: names.InTreeUnique}
	switch {
	case pvName != "":
		id.SourceKey = memory.PVKey(pvName)
	case d.Driver != "" && d.VolumeHandle != "":
		id.SourceKey = memory.InlineKey(d.Driver, d.VolumeHandle)
	case id.InTreeUnique != "":
		id.SourceKey = memory.InTreeKey(id.InTreeUnique)
	}
	return id
}

// Index finds the existing attachment of a desired volume under any of its names.
type Index struct {
	byVA     map[string]*Attachment
	bySource map[string]*Attachment
	byUnique map[string]*Attachment
}

// NewIndex indexes a node's attachments by VolumeAttachment name, source and unique name.
func NewIndex(atts []*Attachment) Index {
	x := Index{
		byVA:     make(map[string]*Attachment, len(atts)),
		bySource: make(map[string]*Attachment, len(atts)),
		byUnique: make(map[string]*Attachment, len(atts)),
	}
	for _, a := range atts {
		if a.VA != nil {
			x.byVA[a.VA.Name] = a
		}
		if a.SourceKey != "" {
			x.bySource[a.SourceKey] = a
		}
		if a.UniqueName != "" {
			x.byUnique[a.UniqueName] = a
		}
	}
	return x
}

// Find returns the attachment of the volume named id, matching the exact VolumeAttachment
// name first, then the unique names of either mechanism, then the volume source (a
// VolumeAttachment of the same PersistentVolume, whatever its driver: the pair may be held
// because its PV cannot be translated any more, and its attachment must be kept).
func (x Index) Find(id Identity) *Attachment {
	if a := x.byVA[id.VA]; a != nil && id.VA != "" {
		return a
	}
	if a := x.byUnique[id.CSIUnique]; a != nil && id.CSIUnique != "" {
		return a
	}
	if a := x.byUnique[id.InTreeUnique]; a != nil && id.InTreeUnique != "" {
		return a
	}
	if a := x.bySource[id.SourceKey]; a != nil && id.SourceKey != "" {
		return a
	}
	return nil
}
