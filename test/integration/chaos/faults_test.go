package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/faultproxy"
	"github.com/migration-aware/adc/test/simulator"
)

// faults injects one fault at a time, each healed before the next: what can break a
// detach decision (stale caches after a relist, a dead kubelet, an out-of-service node, a
// deleted node, a leader killed mid-work).
type faults struct {
	t        *testing.T
	cp       *controlplane.ControlPlane
	feed     *EtcdFeed
	proxy    *faultproxy.Proxy
	kubelets *simulator.SimulatedKubelets
	churn    *churn
	fleet    *fleet
	replicas *replicas
	maxWait  time.Duration
	rnd      *rand.Rand

	mu       sync.Mutex
	injected map[string]int
	added    int
}

// fault is one kind of fault; run injects it, waits and heals it.
type fault struct {
	name string
	run  func(ctx context.Context) error
}

func (f *faults) all() []fault {
	return []fault{
		{"kill-leader", f.killLeader},
		{"apiserver-restart-compacted", f.restartAPIServer},
		{"node-watch-lag", f.nodeWatchLag},
		{"node-not-ready", func(ctx context.Context) error {
			return f.notReady(ctx, v1.ConditionUnknown, 0, f.maxWait+3*time.Second)
		}},
		{"node-not-ready-long-ago", func(ctx context.Context) error {
			return f.notReady(ctx, v1.ConditionFalse, 2*time.Minute, 4*time.Second)
		}},
		{"node-out-of-service", f.outOfService},
		{"node-deleted", f.deleteNode},
	}
}

// Run injects faults in a seeded random order, with 1-3 s between them, until deadline, and
// at least each kind once.
func (f *faults) Run(ctx context.Context, deadline time.Time) error {
	f.injected = map[string]int{}
	all := f.all()
	for round := 0; ; round++ {
		order := f.rnd.Perm(len(all))
		for _, i := range order {
			if ctx.Err() != nil || round > 0 && time.Now().After(deadline) {
				return ctx.Err()
			}
			fl := all[i]
			start := time.Now()
			if err := fl.run(ctx); err != nil {
				return fmt.Errorf("fault %s: %w", fl.name, err)
			}
			f.mu.Lock()
			f.injected[fl.name]++
			f.mu.Unlock()
			f.t.Logf("%s fault %s done in %s", time.Now().Format("15:04:05.000"), fl.name, time.Since(start).Round(time.Millisecond))
			if err := pause(ctx, time.Second+time.Duration(f.rnd.Int64N(int64(2*time.Second)))); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
	}
}

// Injected returns how often each fault ran.
func (f *faults) Injected() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.injected {
		out[k] = v
	}
	return out
}

func (f *faults) killLeader(ctx context.Context) error {
	who, err := f.replicas.KillLeader(ctx)
	if err != nil {
		return err
	}
	f.t.Logf("killed the adc leader (%s) with SIGKILL", who)
	return nil
}

// restartAPIServer stops kube-apiserver, compacts etcd to its current revision once the
// checker has read everything, and starts it again: every client's watch then gets 410 Gone
// and relists, the informers of adc resyncing one by one.
func (f *faults) restartAPIServer(ctx context.Context) error {
	var compacted int64
	var down time.Duration
	// adc's Node watch comes back last, after the churn burst (the incident: 11 s after the
	// Pod and VolumeAttachment watches).
	if _, err := f.replicas.WaitForWarmLeader(ctx, 30*time.Second); err != nil {
		return err
	}
	f.proxy.Freeze("nodes")
	defer f.proxy.Heal("nodes")
	err := f.cp.RestartAPIServer(func() error {
		head, err := f.feed.CatchUp(ctx, 20*time.Second)
		if err != nil {
			return err
		}
		if err := f.feed.Compact(ctx, head); err != nil {
			return err
		}
		compacted = head
		// Down briefly, so the adc leader keeps its lease (as a production leader does through
		// a restart) and decides on the caches it had; its Node watch stays held (above) while
		// the Pod and VolumeAttachment informers relist after 410 Gone.
		down = 500*time.Millisecond + time.Duration(f.rnd.Int64N(int64(time.Second)))
		return pause(ctx, down)
	})
	if err != nil {
		return err
	}
	f.t.Logf("restarted kube-apiserver after %s down; etcd compacted to rev %d while it was down; churn burst", down.Round(time.Millisecond), compacted)
	f.churn.Burst(ctx, burst)
	return nil
}

// burst is how long churn runs fast while adc's Node watch is held: long enough for pods to
// attach, be mounted and be deleted inside the window (the incident's was 11 s).
const burst = 6 * time.Second

// nodeWatchLag holds adc's Node list and watch for a burst of fast churn, then lets them go:
// its Node cache is seconds old (no status writes of its own, no volumesInUse of the
// kubelet) while its Pod and VolumeAttachment caches are current.
func (f *faults) nodeWatchLag(ctx context.Context) error {
	if _, err := f.replicas.WaitForWarmLeader(ctx, 30*time.Second); err != nil {
		return err
	}
	f.proxy.Freeze("nodes")
	defer f.proxy.Heal("nodes")
	f.churn.Burst(ctx, burst)
	f.t.Logf("adc's Node watch held for a %s churn burst", burst)
	return nil
}

// notReady stops a node's kubelet and sets its Ready condition to status since ago (the node
// lifecycle controller's view of a dead kubelet), evicts its pods a second later so their
// claims move to other nodes, and after hold brings the kubelet back.
func (f *faults) notReady(ctx context.Context, status v1.ConditionStatus, ago, hold time.Duration) error {
	node := f.fleet.Pick(f.rnd, 4)
	if node == "" {
		return nil
	}
	defer f.fleet.Heal(node)
	f.kubelets.Stop(node)
	if err := f.retry(ctx, func(ctx context.Context) error {
		return (simulator.Kubelet{Client: f.cp.Client}).SetReadyCondition(ctx, node, status, time.Now().Add(-ago))
	}); err != nil {
		return err
	}
	if err := pause(ctx, time.Second); err != nil {
		return err
	}
	evicted := f.churn.Evict(ctx, node)
	f.t.Logf("node %s Ready=%s since %s ago, kubelet stopped, %d pods evicted", node, status, ago, evicted)
	if err := pause(ctx, hold); err != nil {
		return err
	}
	return f.retry(ctx, func(ctx context.Context) error { return f.kubelets.Resume(ctx, node) })
}

// outOfService marks a dead node with node.kubernetes.io/out-of-service:NoExecute, which
// allows detaching its in-use volumes at once, evicts its pods, and later removes the taint
// and brings the kubelet back.
func (f *faults) outOfService(ctx context.Context) error {
	node := f.fleet.Pick(f.rnd, 4)
	if node == "" {
		return nil
	}
	defer f.fleet.Heal(node)
	f.kubelets.Stop(node)
	if err := f.retry(ctx, func(ctx context.Context) error {
		return (simulator.Kubelet{Client: f.cp.Client}).SetReadyCondition(ctx, node, v1.ConditionFalse, time.Now())
	}); err != nil {
		return err
	}
	if err := f.setTaint(ctx, node, true); err != nil {
		return err
	}
	evicted := f.churn.Evict(ctx, node)
	f.t.Logf("node %s NotReady with the out-of-service taint, %d pods evicted", node, evicted)
	if err := pause(ctx, 4*time.Second); err != nil {
		return err
	}
	if err := f.setTaint(ctx, node, false); err != nil {
		return err
	}
	return f.retry(ctx, func(ctx context.Context) error { return f.kubelets.Resume(ctx, node) })
}

func (f *faults) setTaint(ctx context.Context, node string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"value":"nodeshutdown","effect":"NoExecute"}]}}`, outOfServiceTaint)
	if !on {
		patch = `{"spec":{"taints":null}}`
	}
	return f.retry(ctx, func(ctx context.Context) error {
		_, err := f.cp.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("setting the out-of-service taint on %s to %t: %w", node, on, err)
		}
		return nil
	})
}

// deleteNode deletes a node with its pods, as a cloud provider does for a removed VM, and
// registers a fresh node in its place.
func (f *faults) deleteNode(ctx context.Context) error {
	node := f.fleet.Pick(f.rnd, 4)
	if node == "" {
		return nil
	}
	f.kubelets.Remove(node)
	evicted := f.churn.Evict(ctx, node)
	f.fleet.Delete(node)
	if err := f.retry(ctx, func(ctx context.Context) error {
		if err := f.cp.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting node %s: %w", node, err)
		}
		return nil
	}); err != nil {
		return err
	}
	f.mu.Lock()
	f.added++
	fresh := fmt.Sprintf("n-new-%d", f.added)
	f.mu.Unlock()
	if err := f.retry(ctx, func(ctx context.Context) error { return f.kubelets.AddNode(ctx, fresh) }); err != nil {
		return err
	}
	f.fleet.Add(fresh)
	f.t.Logf("node %s deleted with %d pods; node %s registered", node, evicted, fresh)
	return nil
}

// retry runs op until it succeeds, for up to 20 s: the API server may be coming back.
func (f *faults) retry(ctx context.Context, op func(ctx context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		last = op(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return nil
}

// pause waits d, a fault's duration (not a synchronisation), or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
