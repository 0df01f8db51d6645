package cached

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestNewInformerFactoryKeepsOnlyWhatADCReads: the factory of adc on its own caches compact
// objects and builds no namespace index on pods and claims; other informers keep theirs.
func TestNewInformerFactoryKeepsOnlyWhatADCReads(t *testing.T) {
	client := fake.NewClientset(
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}},
		&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1"}})
	factory := NewInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	vas := factory.Storage().V1().VolumeAttachments().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, claims.HasSynced, vas.HasSynced) {
		t.Fatal("caches did not sync")
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"pods": pods, "claims": claims} {
		if _, ok := inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
			t.Errorf("%s have a namespace index", name)
		}
	}
	if obj, _, _ := pods.GetIndexer().GetByKey("ns/p"); obj == nil {
		t.Error("the pod is not cached")
	} else if _, ok := obj.(*cachedPod); !ok {
		t.Errorf("the pod is cached as %T, want *cachedPod", obj)
	}
	if obj, _, _ := claims.GetIndexer().GetByKey("ns/c"); obj == nil {
		t.Error("the claim is not cached")
	} else if _, ok := obj.(*cachedClaim); !ok {
		t.Errorf("the claim is cached as %T, want *cachedClaim", obj)
	}
	if obj, _, _ := vas.GetIndexer().GetByKey("csi-1"); obj == nil {
		t.Error("the VolumeAttachment is not cached")
	} else if _, ok := obj.(*cachedVA); !ok {
		t.Errorf("the VolumeAttachment is cached as %T, want *cachedVA", obj)
	}
}
