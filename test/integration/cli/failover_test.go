package cli

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// replica is one `adc controller` process.
type replica struct {
	name string
	cmd  *exec.Cmd
	out  *framework.Output
}

func startReplica(t *testing.T, name, leaseName string, lease time.Duration) *replica {
	t.Helper()
	cp := framework.Get(t)
	r := &replica{name: name, out: &framework.Output{}}
	r.cmd = exec.Command(adcBinary, "controller", "--kubeconfig", cp.KubeconfigPath, "--http-addr", "127.0.0.1:0",
		"--leader-elect-namespace", "default", "--leader-elect-lease-name", leaseName,
		"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", (lease * 3 / 4).String(),
		"--leader-elect-retry-period", (lease / 8).String(), "--workers", "2", "-v", "2")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		if t.Failed() {
			t.Logf("replica %s output:\n%s", name, r.out.String())
		}
	})
	return r
}

func (r *replica) created() int { return strings.Count(r.out.String(), "Created VolumeAttachment") }

// Two replicas: only the leader acts; kill -9 the leader and the standby takes over within the
// lease duration and finishes the pending attaches, with no duplicate or lost VolumeAttachment.
func TestLeaderFailover(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	const lease = 2 * time.Second
	kubelet := simulator.Kubelet{Client: cp.Client}
	node := "failover-node"
	if _, err := kubelet.RegisterNode(ctx, node, true); err != nil {
		t.Fatal(err)
	}
	sim := &simulator.ExternalAttacher{Client: cp.Client}
	if err := sim.Run(ctx); err != nil {
		t.Fatal(err)
	}

	a := startReplica(t, "a", "adc-failover", lease)
	holder := waitForLeaseHolder(t, "adc-failover", "", 20*time.Second)
	b := startReplica(t, "b", "adc-failover", lease)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(b.out.String(), "standing by"), nil
	}); err != nil {
		t.Fatalf("replica b never reported standing by")
	}

	driver := "failover.csi.example.com"
	for i := 0; i < 5; i++ {
		createBoundCSIPod(t, fmt.Sprintf("failover-first-%d", i), node, driver, fmt.Sprintf("first-%d", i))
	}
	waitForVAs(t, driver, 5)
	// The log line follows the create; give the leader's output a moment to arrive.
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return a.created() >= 5, nil
	})
	if a.created() != 5 || b.created() != 0 {
		t.Fatalf("creates: leader a=%d, standby b=%d; want 5 and 0 (only the leader acts)", a.created(), b.created())
	}

	// Kill the leader without letting it release the lease, then give the cluster work.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i := 0; i < 5; i++ {
		createBoundCSIPod(t, fmt.Sprintf("failover-second-%d", i), node, driver, fmt.Sprintf("second-%d", i))
	}
	newHolder := waitForLeaseHolder(t, "adc-failover", holder, 3*lease)
	tookOver := time.Since(killed)
	t.Logf("standby took the lease %s after the leader was killed (lease duration %s)", tookOver.Round(time.Millisecond), lease)
	if tookOver > lease+lease/2 {
		t.Errorf("takeover took %s, want within the lease duration %s (plus one retry period)", tookOver, lease)
	}
	if newHolder == holder {
		t.Fatalf("lease still held by the killed leader %s", holder)
	}
	waitForVAs(t, driver, 10)
	names := listedVolumes(t, node)
	for i := 0; i < 5; i++ {
		for _, batch := range []string{"first", "second"} {
			want := fmt.Sprintf("kubernetes.io/csi/%s^%s-%d", driver, batch, i)
			if !names[want] {
				t.Errorf("%s not listed in node status after failover", want)
			}
		}
	}
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return b.created() >= 5, nil
	})
	if got := b.created(); got != 5 {
		t.Errorf("new leader created %d VolumeAttachments, want exactly the 5 pending ones (no duplicates)", got)
	}
}

func waitForLeaseHolder(t *testing.T, leaseName, notHolder string, timeout time.Duration) string {
	t.Helper()
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := framework.Get(t).Client.CoordinationV1().Leases("default").Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		return holder != "" && holder != notHolder, nil
	})
	if err != nil {
		t.Fatalf("no new lease holder (besides %q) within %s; last %q", notHolder, timeout, holder)
	}
	return holder
}

// waitForVAs waits until exactly n VolumeAttachments of driver exist, all attached.
func waitForVAs(t *testing.T, driver string, n int) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := framework.Get(t).Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		count, attached := 0, 0
		for _, va := range list.Items {
			if va.Spec.Attacher == driver {
				count++
				if va.Status.Attached {
					attached++
				}
			}
		}
		last = fmt.Sprintf("%d VolumeAttachments, %d attached", count, attached)
		if count > n {
			return false, fmt.Errorf("%d VolumeAttachments of %s, want %d: duplicates", count, driver, n)
		}
		return count == n && attached == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d attached VolumeAttachments of %s: %v (last: %s)", n, driver, err, last)
	}
}

func listedVolumes(t *testing.T, node string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := framework.Get(t).Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for k := range out {
			delete(out, k)
		}
		for _, av := range n.Status.VolumesAttached {
			out[string(av.Name)] = true
		}
		return len(out) >= 10, nil
	})
	if err != nil {
		t.Logf("node %s lists %d volumes", node, len(out))
	}
	return out
}

// A leader that loses its lease (here: another holder takes it over) stops its controller
// and exits non-zero, so that its Pod restarts and rejoins the election.
func TestLostLeaseExitsNonZero(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	const lease = 2 * time.Second
	r := startReplica(t, "loser", "adc-lost", lease)
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	holder := waitForLeaseHolder(t, "adc-lost", "", 20*time.Second)

	leases := cp.Client.CoordinationV1().Leases("default")
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, "adc-lost", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		intruder, long := "intruder", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &intruder, &long, &now, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, nil // a conflict with the leader's renewal: try again
	}); err != nil {
		t.Fatalf("taking the lease from %s: %v", holder, err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("the replica exited 0 after losing its lease, want non-zero")
		}
		if !strings.Contains(r.out.String(), "Lost the leader election lease") {
			t.Errorf("no log line about the lost lease:\n%s", r.out.String())
		}
	case <-time.After(4 * lease):
		t.Fatalf("the replica kept running %s after losing its lease", 4*lease)
	}
	_ = leases.Delete(ctx, "adc-lost", metav1.DeleteOptions{})
}
