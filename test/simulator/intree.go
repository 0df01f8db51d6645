package simulator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/migration-aware/adc/pkg/adc"
)

// InTreeAttacher is a SIMULATED in-tree volume plugin host, standing in for what
// kube-controller-manager provides when adc runs inside it: it "attaches" any volume after
// Delay and remembers it, and returns a made-up device path.
type InTreeAttacher struct {
	Delay time.Duration

	mu       sync.Mutex
	attached map[string]string // node/uniqueName -> device path
	calls    []string
}

var _ adc.InTreeAttacher = &InTreeAttacher{}

// Attach implements adc.InTreeAttacher.
func (a *InTreeAttacher) Attach(ctx context.Context, v adc.InTreeVolume, node string) (string, error) {
	if err := a.wait(ctx); err != nil {
		return "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.attached == nil {
		a.attached = map[string]string{}
	}
	path := fmt.Sprintf("/dev/disk/by-id/simulated-%d", len(a.attached)+1)
	a.attached[node+"/"+v.UniqueName] = path
	a.calls = append(a.calls, "attach "+v.UniqueName+" "+node)
	return path, nil
}

// Detach implements adc.InTreeAttacher.
func (a *InTreeAttacher) Detach(ctx context.Context, v adc.InTreeVolume, node string) error {
	if err := a.wait(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.attached, node+"/"+v.UniqueName)
	a.calls = append(a.calls, "detach "+v.UniqueName+" "+node)
	return nil
}

// VolumesAreAttached implements adc.InTreeAttacher.
func (a *InTreeAttacher) VolumesAreAttached(_ context.Context, vols []adc.InTreeVolume, node string) (map[string]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]bool, len(vols))
	for _, v := range vols {
		_, out[v.UniqueName] = a.attached[node+"/"+v.UniqueName]
	}
	return out, nil
}

// Calls returns the attach and detach calls so far, in order.
func (a *InTreeAttacher) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *InTreeAttacher) wait(ctx context.Context) error {
	if a.Delay <= 0 {
		return nil
	}
	select {
	case <-time.After(a.Delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
