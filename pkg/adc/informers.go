package adc

import (
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// NewInformerFactory is the informer factory of adc running on its own (`adc controller`, the
// demo): its caches keep only what adc reads, in compact forms (package cached). Inside
// kube-controller-manager the host's factory is used as it is.
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return cached.NewInformerFactory(client, resync)
}
