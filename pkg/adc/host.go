package adc

import (
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// What a host of the controller needs besides New and Options: adc's own informer factory,
// and its name inside kube-controller-manager.

// NewInformerFactory is the informer factory of adc running on its own (`adc controller`, the
// demo): its caches keep only what adc reads, in compact forms (package cached). Inside
// kube-controller-manager the host's factory is used as it is.
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return cached.NewInformerFactory(client, resync)
}

// ControllerManagerName is adc's canonical controller name inside kube-controller-manager:
// the name of its controller descriptor (and so of --controllers and of its /healthz/<name>
// check). It follows kube-controller-manager's naming rule: lower case words joined by "-",
// ending in "-controller".
const ControllerManagerName = "migration-aware-attach-detach-controller"
