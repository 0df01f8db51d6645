package cli

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

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
	// No secure port: both replicas would want it (the controller test covers it).
	r.cmd = exec.Command(adcBinary, "controller", "--kubeconfig", cp.KubeconfigPath, "--http-addr", "127.0.0.1:0", "--secure-port", "0",
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

// leaseState is one state of a Lease as a watch delivered it.
type leaseState struct {
	holder          string
	acquire, renew  time.Time
	duration        time.Duration
	resourceVersion string
}

// leaseHistory records every state of a Lease from a watch, in the order the API server
// applied them.
type leaseHistory struct {
	mu     sync.Mutex
	states []leaseState
}

func (h *leaseHistory) snapshot() []leaseState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]leaseState(nil), h.states...)
}

// watchLease follows the Lease name in namespace default until the test ends.
func watchLease(t *testing.T, name string) *leaseHistory {
	t.Helper()
	leases := framework.Get(t).Client.CoordinationV1().Leases("default")
	h := &leaseHistory{}
	record := func(l *coordinationv1.Lease) {
		st := leaseState{resourceVersion: l.ResourceVersion}
		if l.Spec.HolderIdentity != nil {
			st.holder = *l.Spec.HolderIdentity
		}
		if l.Spec.AcquireTime != nil {
			st.acquire = l.Spec.AcquireTime.Time
		}
		if l.Spec.RenewTime != nil {
			st.renew = l.Spec.RenewTime.Time
		}
		if l.Spec.LeaseDurationSeconds != nil {
			st.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		h.mu.Lock()
		h.states = append(h.states, st)
		h.mu.Unlock()
	}
	l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading lease %s: %v", name, err)
	}
	record(l)
	w, err := leases.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatalf("watching lease %s: %v", name, err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok && ev.Type == watch.Modified {
				record(l)
			}
		}
	}()
	return h
}

// linesWith returns the numbers of the lines of out that contain s, in order.
func linesWith(out, s string) []int {
	var at []int
	for i, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			at = append(at, i)
		}
	}
	return at
}

// Two replicas: only the leader acts; kill -9 the leader and the standby takes over once the
// lease the killed leader last renewed has expired, and finishes the pending attaches, with
// no duplicate or lost VolumeAttachment. The test asserts the order of events (the Lease's
// states as a watch saw them, each replica's log) and logs how long the takeover took.
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
	history := watchLease(t, "adc-failover")
	clockFrom := time.Now() // before the leader's last renewal: see wallClockStep
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
	_, _ = a.cmd.Process.Wait()
	for i := 0; i < 5; i++ {
		createBoundCSIPod(t, fmt.Sprintf("failover-second-%d", i), node, driver, fmt.Sprintf("second-%d", i))
	}
	// A hang guard, not a budget: the takeover's time is logged below.
	newHolder := waitForLeaseHolder(t, "adc-failover", holder, 60*time.Second)
	t.Logf("standby took the lease %s after the leader was killed (lease duration %s)", time.Since(killed).Round(time.Millisecond), lease)
	if newHolder == holder {
		t.Fatalf("lease still held by the killed leader %s", holder)
	}
	// The test's Lease watch may deliver the acquisition after the poll above saw it: wait for
	// it (a hang guard) before reading the history.
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.ContainsFunc(history.snapshot(), func(st leaseState) bool { return st.holder == newHolder }), nil
	})
	// The Lease's history: the killed leader's renewals, then the standby's acquisition, and
	// nothing of the old leader after that. The standby acquired only after the lease the
	// leader renewed had expired, as a standby can tell: acquireTime >= the renewTime of the
	// first renewal it could not tell from the last + duration (see sameToCandidate), within
	// wallClockSlack, plus any step of the wall clock measured meanwhile.
	slack := wallClockSlack
	if step := wallClockStep(clockFrom); step >= time.Millisecond {
		t.Logf("the wall clock moved %s against the monotonic clock during the failover; allowing for it", step.Round(time.Millisecond))
		slack += step
	}
	var lastRenew, sameRenew leaseState
	var acquired *leaseState
	for _, st := range history.snapshot() {
		switch {
		case st.holder == holder && acquired != nil:
			t.Errorf("the killed leader %s wrote the lease (rv %s) after %s acquired it", holder, st.resourceVersion, newHolder)
		case st.holder == holder:
			if !sameToCandidate(st, lastRenew) {
				sameRenew = st
			}
			lastRenew = st
		case st.holder == newHolder && acquired == nil:
			acquired = &st
		}
	}
	switch {
	case lastRenew.renew.IsZero():
		t.Errorf("the watch saw no renewal by the leader %s: %+v", holder, history.snapshot())
	case acquired == nil:
		t.Errorf("the watch never saw %s acquire the lease: %+v", newHolder, history.snapshot())
	case acquired.acquire.Before(sameRenew.renew.Add(sameRenew.duration).Add(-slack)):
		t.Errorf("%s acquired the lease at %s, before the lease %s renewed at %s (for %s; last renewed at %s) expired",
			newHolder, acquired.acquire.Format(time.StampMicro), holder, sameRenew.renew.Format(time.StampMicro),
			sameRenew.duration, lastRenew.renew.Format(time.StampMicro))
	default:
		t.Logf("leader's last renewal %s (rv %s; the first a standby could not tell from it: %s), lease expired %s after that, standby acquired %s later (rv %s)",
			lastRenew.renew.Format(time.StampMicro), lastRenew.resourceVersion, sameRenew.renew.Format(time.StampMicro),
			sameRenew.duration, acquired.acquire.Sub(sameRenew.renew.Add(sameRenew.duration)).Round(time.Millisecond), acquired.resourceVersion)
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
	// The new leader created them only after it became the leader.
	out := b.out.String()
	became := linesWith(out, "Became the leader")
	if creates := linesWith(out, "Created VolumeAttachment"); len(became) != 1 || len(creates) == 0 || creates[0] < became[0] {
		t.Errorf("replica b: became leader at log lines %v, created VolumeAttachments at lines %v; want every create after becoming the leader", became, creates)
	}
}

// sameToCandidate says whether a standby tells the two states of the Lease apart. client-go's
// elector restarts its lease timer only when the record it reads differs from the one it saw,
// and it compares the record as JSON with its times as metav1.Time, whole seconds: renewals by
// the same holder within one wall-clock second look the same to it. With this test's retry
// period (a quarter of a second) a standby that read the first of them times the lease from
// there and may acquire up to a second before the last renewal + duration; the leader it
// replaces stops leading when its own renewals fail for --leader-elect-renew-deadline, so
// adc's defaults (renewals 2 s apart, lease 15 s, deadline 10 s) never meet this.
func sameToCandidate(a, b leaseState) bool {
	return a.holder == b.holder && a.duration == b.duration &&
		a.renew.Truncate(time.Second).Equal(b.renew.Truncate(time.Second)) &&
		a.acquire.Truncate(time.Second).Equal(b.acquire.Truncate(time.Second))
}

// wallClockSlack is how far the two timestamps the failover check compares may disagree
// without a second leader: renewTime and acquireTime are wall-clock readings of two processes,
// while client-go times a lease on the candidate's monotonic clock, from when it observed the
// last renewal (at or after its write). A wall clock slewed or stepped meanwhile (this machine's
// is adjusted now and then: one run saw acquireTime 29 ms before renewTime + duration) moves
// the wall readings apart by as much; a second leader would acquire up to a whole lease
// duration (2 s here) early.
const wallClockSlack = 250 * time.Millisecond

// wallClockStep is how far the wall clock moved against the monotonic clock since from: a
// step of the machine's clock. Both adc processes and the test read the same wall clock,
// so a step between the two readings shifts them apart by as much.
func wallClockStep(from time.Time) time.Duration {
	now := time.Now()
	return (now.Round(0).Sub(from.Round(0)) - now.Sub(from)).Abs()
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
	var taken string // the resourceVersion of the intruder's write
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, "adc-lost", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		intruder, long := "intruder", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &intruder, &long, &now, &now
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			taken = updated.ResourceVersion
		}
		return err == nil, nil // a conflict with the leader's renewal: try again
	}); err != nil {
		t.Fatalf("taking the lease from %s: %v", holder, err)
	}
	// A hang guard, not a budget.
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("the replica exited 0 after losing its lease, want non-zero")
		}
		if !strings.Contains(r.out.String(), "Lost the leader election lease") {
			t.Errorf("no log line about the lost lease:\n%s", r.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the replica kept running 60s after losing its lease")
	}
	// In order: the intruder took the lease, the replica noticed and exited, and it never
	// wrote the lease again (no renewal over the intruder, no release on the way out).
	if l, err := leases.Get(ctx, "adc-lost", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if l.ResourceVersion != taken || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "intruder" {
		t.Errorf("lease rv %s held by %v after the replica exited; want the intruder's write (rv %s) untouched", l.ResourceVersion, l.Spec.HolderIdentity, taken)
	}
	_ = leases.Delete(ctx, "adc-lost", metav1.DeleteOptions{})
}
