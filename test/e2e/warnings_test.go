package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// unregistered counts, over the whole run, the FailedAttachVolume warnings caused by an
// attach to a node that had not registered the volume's CSI driver (issue 26): adc must
// create no VolumeAttachment before the node's CSINode lists the driver, so the suite fails
// on any. Every stack is counted before it stops: the shared one in TestMain, the tests'
// own in ownStack.
var unregistered struct {
	mu    sync.Mutex
	total int
	lines []string
}

// countUnregisteredDriverWarnings adds a stack's warnings to the run's count.
func countUnregisteredDriverWarnings(s *harness.Stack, stack string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines, n, err := s.UnregisteredDriverWarnings(ctx)
	if err != nil {
		return err
	}
	unregistered.mu.Lock()
	defer unregistered.mu.Unlock()
	unregistered.total += n
	for _, l := range lines {
		unregistered.lines = append(unregistered.lines, stack+": "+l)
	}
	return nil
}

// reportUnregisteredDriverWarnings prints the run's count and returns an error when there
// was any.
func reportUnregisteredDriverWarnings() error {
	unregistered.mu.Lock()
	defer unregistered.mu.Unlock()
	fmt.Printf("e2e figures: FailedAttachVolume warnings caused by an unregistered CSI driver over the run: %d\n", unregistered.total)
	if unregistered.total == 0 {
		return nil
	}
	return fmt.Errorf("%d FailedAttachVolume warnings caused by an unregistered CSI driver (adc attached before the node's CSINode listed the driver):\n  %s",
		unregistered.total, strings.Join(unregistered.lines, "\n  "))
}
