package harness

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
)

// StartInformers starts the factory's informers, waits until every one has synced, and
// shuts the factory down when ctx ends, so a test's own watches stop with it.
func StartInformers(ctx context.Context, factory informers.SharedInformerFactory) error {
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watch of %v did not sync", typ)
		}
	}
	go func() { <-ctx.Done(); factory.Shutdown() }()
	return nil
}
