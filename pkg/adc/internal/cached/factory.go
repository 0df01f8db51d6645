// Package cached is what adc keeps in its informer caches and how it reads them: the compact
// forms of pods, claims, volumes and VolumeAttachments (only what adc reads, in a fraction of
// the memory), the transform and the informer factory that make them, the readers that answer
// the controller's questions from either form (whole objects inside kube-controller-manager,
// compact ones on its own), and which updates change what adc reads. It is apart from the
// controller because the caches are most of adc's memory and every reader must agree with
// the forms.
package cached

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NewInformerFactory is the informer factory of adc running on its own (`adc controller`, the
// demo), which owns it: its caches keep only what adc reads (WithTrimmedObjects), and its pod
// and claim informers go without client-go's namespace index, which adc never reads (per
// namespace, a set of the keys of every pod and claim in it: ~45 bytes per object). Inside
// kube-controller-manager the host's factory is used as it is.
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	factory := informers.NewSharedInformerFactoryWithOptions(client, resync, WithTrimmedObjects())
	factory.InformerFor(&v1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{}, nil)
	})
	factory.InformerFor(&v1.PersistentVolumeClaim{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPersistentVolumeClaimInformer(c, metav1.NamespaceAll, resync, cache.Indexers{}, nil)
	})
	return factory
}
