package cached

import "k8s.io/client-go/tools/cache"

// UnwrapTombstone returns the last known object of a delete event whose final state the
// informer missed (a DeletedFinalStateUnknown), or obj itself.
func UnwrapTombstone(obj interface{}) interface{} {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
