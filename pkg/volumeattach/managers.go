package volumeattach

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Who wrote what an attach/detach controller owns, read from managedFields: adc's guard
// against a second controller (pkg/adc) and `adc preflight` ask it.

// KubeControllerManager is the field manager of kube-controller-manager's built-in
// attach/detach controller (its user agent's program name).
const KubeControllerManager = "kube-controller-manager"

// IsKubeControllerManager reports whether a field manager is a kube-controller-manager's:
// client-go names it after the binary, so a distribution's build (kube-controller-manager-adc,
// kube-controller-manager-amd64) writes as the binary's name, which starts with
// kube-controller-manager.
func IsKubeControllerManager(manager string) bool {
	return strings.HasPrefix(manager, KubeControllerManager)
}

// VolumesAttachedOwner returns the field manager that owns a Node's status.volumesAttached:
// the list is atomic, so that is whoever changed it last. Empty when nobody does.
func VolumesAttachedOwner(n *v1.Node) string {
	m, _ := VolumesAttachedEntry(n)
	return m.Manager
}

// VolumesAttachedEntry returns the managedFields entry that owns a Node's
// status.volumesAttached, whose Time is when that manager last wrote the node's status.
func VolumesAttachedEntry(n *v1.Node) (metav1.ManagedFieldsEntry, bool) {
	for _, m := range n.ManagedFields {
		if m.Subresource == "status" && owns(m, "f:status", "f:volumesAttached") {
			return m, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// Creator returns the field manager that owns a VolumeAttachment's spec: whoever created
// it (the spec is immutable). Empty when managedFields do not say.
func Creator(va *storagev1.VolumeAttachment) string {
	m, _ := CreatorEntry(va)
	return m.Manager
}

// CreatorEntry returns the managedFields entry of a VolumeAttachment's creator.
func CreatorEntry(va *storagev1.VolumeAttachment) (metav1.ManagedFieldsEntry, bool) {
	for _, m := range va.ManagedFields {
		if m.Subresource == "" && owns(m, "f:spec") {
			return m, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// owns reports whether a managedFields entry owns the field at path (a FieldsV1 path of
// "f:<name>" steps).
func owns(m metav1.ManagedFieldsEntry, path ...string) bool {
	if m.FieldsV1 == nil {
		return false
	}
	raw := m.FieldsV1.GetRawBytes()
	// Most entries (the kubelet's, with its images and conditions) do not name the field:
	// skip them without decoding, as adc's informer transform asks on every Node update.
	if len(path) == 0 || !bytes.Contains(raw, []byte(strconv.Quote(path[len(path)-1]))) {
		return false
	}
	for _, step := range path {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return false
		}
		next, ok := fields[step]
		if !ok {
			return false
		}
		raw = next
	}
	return true
}
