// Package testinformers starts the informer factories of test code (the end-to-end harness,
// its tests, the simulators) the same way: started, synced, and shut down with the context.
package testinformers

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
)

// Start starts the factory's informers, waits until every one has synced, and shuts the
// factory down when ctx ends, so a test's own watches stop with it.
func Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watch of %v did not sync", typ)
		}
	}
	go func() { <-ctx.Done(); factory.Shutdown() }()
	return nil
}
