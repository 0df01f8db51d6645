package migration

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// csiUniquePrefix starts every CSI unique volume name.
const csiUniquePrefix = CSIPluginName + "/"

// IsCSIUniqueName reports whether a unique volume name (node status) is a CSI volume's.
func IsCSIUniqueName(unique string) bool { return strings.HasPrefix(unique, csiUniquePrefix) }

// VolumeAttachmentName returns the name of the VolumeAttachment for a CSI volume on a node:
// "csi-" + lowercase hex sha256 of handle, driver and node name concatenated without a
// separator. The kubelet and the external-attacher compute the same name, so it must match
// upstream byte for byte. It allocates only the returned string when the three inputs fit
// in 256 bytes.
func VolumeAttachmentName(volumeHandle, driver, nodeName string) string {
	var buf [256]byte
	b := append(buf[:0], volumeHandle...)
	b = append(b, driver...)
	b = append(b, nodeName...)
	sum := sha256.Sum256(b)
	var out [4 + 2*sha256.Size]byte
	copy(out[:4], "csi-")
	hex.Encode(out[4:], sum[:])
	return string(out[:])
}

// CSIUniqueName returns the unique volume name the kubelet expects in Node
// status.volumesAttached for a CSI volume: kubernetes.io/csi/<driver>^<handle>.
func CSIUniqueName(driver, volumeHandle string) string {
	return csiUniquePrefix + driver + "^" + volumeHandle
}

// ParseCSIUniqueName splits a unique name made by CSIUniqueName into driver and volume
// handle; ok is false for any other name (an in-tree plugin's). A driver name cannot hold a
// '^'; a handle may.
func ParseCSIUniqueName(unique string) (driver, volumeHandle string, ok bool) {
	rest, ok := strings.CutPrefix(unique, csiUniquePrefix)
	if !ok {
		return "", "", false
	}
	driver, volumeHandle, ok = strings.Cut(rest, "^")
	return driver, volumeHandle, ok && driver != "" && volumeHandle != ""
}

// InTreeUniqueName returns the unique volume name of an in-tree attachable volume:
// <plugin>/<volume id>, where the volume id is what the in-tree plugin's GetVolumeName returns.
func InTreeUniqueName(plugin, volumeID string) string {
	return plugin + "/" + volumeID
}
