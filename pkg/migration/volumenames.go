package migration

import "fmt"

// VolumeNames are every name under which an attachment of a decided volume may exist on a
// node, whatever mechanism made it: a node that flipped between in-tree and CSI keeps the
// attachment it has (kubernetes#98687), and a ReadWriteOnce check must find the volume
// attached elsewhere under either name.
type VolumeNames struct {
	// VolumeAttachment is the name of its VolumeAttachment on the CSI path.
	VolumeAttachment string
	// CSIUnique is kubernetes.io/csi/<driver>^<handle>, the name node status lists it under
	// when attached through CSI.
	CSIUnique string
	// InTreeUnique is <plugin>/<volume id>, the name when attached in-tree.
	InTreeUnique string
}

// NamesOf returns the names of the volume decision d is about, on node. The controller and
// the rollout report (its multi-attach check) both name volumes with it.
func NamesOf(d *Decision, node string) VolumeNames {
	var n VolumeNames
	if d.Driver != "" && d.VolumeHandle != "" {
		n.VolumeAttachment = d.VolumeAttachmentName
		if n.VolumeAttachment == "" {
			n.VolumeAttachment = VolumeAttachmentName(d.VolumeHandle, d.Driver, node)
		}
		n.CSIUnique = CSIUniqueName(d.Driver, d.VolumeHandle)
	}
	switch {
	case d.Mechanism == MechanismInTree:
		n.InTreeUnique = d.UniqueName
	case d.InTreeUniqueName != "":
		n.InTreeUnique = d.InTreeUniqueName
	}
	return n
}

// MultiAttachReason is what a ReadWriteOnce volume waiting for its attachment on another node
// says: the controller's hold reason and the rollout report's problem use the same words.
func MultiAttachReason(otherNode string) string {
	return fmt.Sprintf("volume is ReadWriteOnce and still attached to node %q; it is attached here as soon as that attachment is gone", otherNode)
}
