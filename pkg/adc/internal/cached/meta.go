package cached

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// compactMeta is the object metadata adc's compact cache forms keep: identity, version,
// deletion, and the labels, annotations and owners of the kinds whose decisions read them
// (a volume's labels name its zone for translation, a claim's owner says whether a pod's
// generic ephemeral volume may use it). A metav1.ObjectMeta is 232 bytes however empty; this
// is 112. TrimInformerObjects leaves pods, claims and volumes with exactly these fields, so a
// compact form rebuilds the trimmed object.
//
// It implements metav1.Object so that client-go's stores, key functions and tombstones handle
// a compact object as any other. Setting a field it does not keep does nothing: only client-go
// calls the setters, and it reads and sets identity alone.
type compactMeta struct {
	name, namespace     string
	uid                 types.UID
	resourceVersion     string
	deletionTimestamp   *metav1.Time
	labels, annotations map[string]string
	owners              []metav1.OwnerReference
}

var _ metav1.Object = &compactMeta{}

func compactMetaOf(m *metav1.ObjectMeta) compactMeta {
	return compactMeta{name: m.Name, namespace: m.Namespace, uid: m.UID, resourceVersion: m.ResourceVersion,
		deletionTimestamp: m.DeletionTimestamp, labels: m.Labels, annotations: m.Annotations, owners: m.OwnerReferences}
}

// objectMeta rebuilds the metadata; it shares maps and slices with the cache, as a lister's
// object does.
func (m *compactMeta) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.name, Namespace: m.namespace, UID: m.uid, ResourceVersion: m.resourceVersion,
		DeletionTimestamp: m.deletionTimestamp, Labels: m.labels, Annotations: m.annotations, OwnerReferences: m.owners}
}

func (m *compactMeta) deepCopy() compactMeta {
	full := m.objectMeta()
	return compactMetaOf(full.DeepCopy())
}

// trimToCompactMeta leaves m with what compactMeta keeps of it.
func trimToCompactMeta(m *metav1.ObjectMeta) {
	c := compactMetaOf(m)
	*m = c.objectMeta()
}

// GetNamespace implements metav1.Object.
func (m *compactMeta) GetNamespace() string { return m.namespace }

// SetNamespace implements metav1.Object.
func (m *compactMeta) SetNamespace(namespace string) { m.namespace = namespace }

// GetName implements metav1.Object.
func (m *compactMeta) GetName() string { return m.name }

// SetName implements metav1.Object.
func (m *compactMeta) SetName(name string) { m.name = name }

// GetGenerateName implements metav1.Object; not kept.
func (m *compactMeta) GetGenerateName() string { return "" }

// SetGenerateName implements metav1.Object; not kept.
func (m *compactMeta) SetGenerateName(string) {}

// GetUID implements metav1.Object.
func (m *compactMeta) GetUID() types.UID { return m.uid }

// SetUID implements metav1.Object.
func (m *compactMeta) SetUID(uid types.UID) { m.uid = uid }

// GetResourceVersion implements metav1.Object.
func (m *compactMeta) GetResourceVersion() string { return m.resourceVersion }

// SetResourceVersion implements metav1.Object.
func (m *compactMeta) SetResourceVersion(version string) { m.resourceVersion = version }

// GetGeneration implements metav1.Object; not kept.
func (m *compactMeta) GetGeneration() int64 { return 0 }

// SetGeneration implements metav1.Object; not kept.
func (m *compactMeta) SetGeneration(int64) {}

// GetSelfLink implements metav1.Object; not kept.
func (m *compactMeta) GetSelfLink() string { return "" }

// SetSelfLink implements metav1.Object; not kept.
func (m *compactMeta) SetSelfLink(string) {}

// GetCreationTimestamp implements metav1.Object; not kept.
func (m *compactMeta) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp implements metav1.Object; not kept.
func (m *compactMeta) SetCreationTimestamp(metav1.Time) {}

// GetDeletionTimestamp implements metav1.Object.
func (m *compactMeta) GetDeletionTimestamp() *metav1.Time { return m.deletionTimestamp }

// SetDeletionTimestamp implements metav1.Object.
func (m *compactMeta) SetDeletionTimestamp(t *metav1.Time) { m.deletionTimestamp = t }

// GetDeletionGracePeriodSeconds implements metav1.Object; not kept.
func (m *compactMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements metav1.Object; not kept.
func (m *compactMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels implements metav1.Object.
func (m *compactMeta) GetLabels() map[string]string { return m.labels }

// SetLabels implements metav1.Object.
func (m *compactMeta) SetLabels(labels map[string]string) { m.labels = labels }

// GetAnnotations implements metav1.Object.
func (m *compactMeta) GetAnnotations() map[string]string { return m.annotations }

// SetAnnotations implements metav1.Object.
func (m *compactMeta) SetAnnotations(annotations map[string]string) { m.annotations = annotations }

// GetFinalizers implements metav1.Object; not kept.
func (m *compactMeta) GetFinalizers() []string { return nil }

// SetFinalizers implements metav1.Object; not kept.
func (m *compactMeta) SetFinalizers([]string) {}

// GetOwnerReferences implements metav1.Object.
func (m *compactMeta) GetOwnerReferences() []metav1.OwnerReference { return m.owners }

// SetOwnerReferences implements metav1.Object.
func (m *compactMeta) SetOwnerReferences(owners []metav1.OwnerReference) { m.owners = owners }

// GetManagedFields implements metav1.Object; not kept.
func (m *compactMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object; not kept.
func (m *compactMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}
