package cached

import (
	"reflect"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestCompactMetaIsAnObjectToClientGo: client-go's key functions read a compact object as
// any other, and the compact metadata rebuilds exactly what trimming leaves.
func TestCompactMetaIsAnObjectToClientGo(t *testing.T) {
	full := metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "7", GenerateName: "p-",
		Generation: 3, CreationTimestamp: metav1.Now(), DeletionTimestamp: ptr.To(metav1.Now()), DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, Finalizers: []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "o", UID: "uid-o", Controller: ptr.To(true)}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m"}}}
	trimmed := *full.DeepCopy()
	trimToCompactMeta(&trimmed)
	want := metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "7", DeletionTimestamp: full.DeletionTimestamp,
		Labels: full.Labels, Annotations: full.Annotations, OwnerReferences: full.OwnerReferences}
	if !reflect.DeepEqual(trimmed, want) {
		t.Errorf("trimmed metadata %+v, want %+v", trimmed, want)
	}
	m := compactMetaOf(&full)
	if got := m.objectMeta(); !reflect.DeepEqual(got, want) {
		t.Errorf("compact metadata rebuilt %+v, want %+v", got, want)
	}
	pod := &cachedPod{compactMeta: m}
	if key, err := cache.MetaNamespaceKeyFunc(pod); err != nil || key != "ns/p" {
		t.Errorf("key %q, %v; want ns/p", key, err)
	}
	acc, err := meta.Accessor(pod)
	if err != nil || acc.GetUID() != "uid-p" || acc.GetResourceVersion() != "7" || acc.GetDeletionTimestamp() == nil {
		t.Errorf("accessor %v: %v", acc, err)
	}
	cp := m.deepCopy()
	cp.labels["a"], cp.owners[0].Name = "changed", "changed"
	if m.labels["a"] != "b" || m.owners[0].Name != "o" {
		t.Error("deepCopy shares maps or slices with the original")
	}
	if size := unsafe.Sizeof(compactMeta{}); size > 112 {
		t.Errorf("compactMeta is %d bytes; it is kept once per cached pod, claim and volume", size)
	}
	if size := unsafe.Sizeof(cachedPod{}); size >= unsafe.Sizeof(v1.Pod{}.ObjectMeta) {
		t.Errorf("a cachedPod (%d bytes) is no smaller than a pod's metadata alone", size)
	}
}
