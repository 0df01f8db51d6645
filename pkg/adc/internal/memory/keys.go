package memory

import (
	"strings"

	storagev1 "k8s.io/api/storage/v1"
)

// Volume keys name a volume whatever node it is on: a PersistentVolume, an inline CSI volume
// of a driver, or an in-tree attachment's unique name. Reservations, waiters and the sources
// are keyed by them; the controller builds them only with these functions.
const (
	pvKeyPrefix     = "pv:"
	inlineKeyPrefix = "inline:"
	inTreeKeyPrefix = "intree:"
)

// PVKey is the key of a PersistentVolume's volume.
func PVKey(pv string) string { return pvKeyPrefix + pv }

// InlineKey is the key of an inline CSI volume of driver.
func InlineKey(driver, handle string) string { return inlineKeyPrefix + driver + "^" + handle }

// InTreeKey is the key of an in-tree attachment's volume; empty for an empty unique name.
func InTreeKey(unique string) string {
	if unique == "" {
		return ""
	}
	return inTreeKeyPrefix + unique
}

// SourceKey is the key of a VolumeAttachment's volume; empty when it has no source.
func SourceKey(va *storagev1.VolumeAttachment) string {
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		return PVKey(*src.PersistentVolumeName)
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return InlineKey(va.Spec.Attacher, src.InlineVolumeSpec.CSI.VolumeHandle)
	}
	return ""
}

// volumeKey is a source key split by kind, so that a PersistentVolume's key in the sources
// is its name as the VolumeAttachment holds it, allocated once.
type volumeKey struct{ pv, inline string }

func vaVolumeKey(va *storagev1.VolumeAttachment) (volumeKey, bool) {
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		return volumeKey{pv: *src.PersistentVolumeName}, true
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return volumeKey{inline: va.Spec.Attacher + "^" + src.InlineVolumeSpec.CSI.VolumeHandle}, true
	}
	return volumeKey{}, false
}

// volumeKeyOf splits a source key; ok is false for keys no VolumeAttachment has.
func volumeKeyOf(sourceKey string) (volumeKey, bool) {
	if name, ok := strings.CutPrefix(sourceKey, pvKeyPrefix); ok {
		return volumeKey{pv: name}, true
	}
	if rest, ok := strings.CutPrefix(sourceKey, inlineKeyPrefix); ok {
		return volumeKey{inline: rest}, true
	}
	return volumeKey{}, false
}

func (k volumeKey) String() string {
	if k.pv != "" {
		return PVKey(k.pv)
	}
	return inlineKeyPrefix + k.inline
}
