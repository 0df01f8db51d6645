package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// A rolling upgrade of adc (issue 42, item 3): two replicas elect a leader, the old version
// leads and has attached every volume (a StatefulSet of three and three plain pods, one a
// migrated gce-pd volume), the new version stands by, then the old one gets SIGTERM, as the
// kubelet sends it when its Pod is replaced, and must exit cleanly; the new one takes the
// Lease and carries on: a pod created right after the SIGTERM is attached by it.
//   - standalone: adc's Deployment (deploy/kubernetes), the Lease adc-system/adc with the
//     shipped flags (lease 15 s, renew deadline 10 s, retry period 2 s); adc releases the
//     Lease on its way out (ReleaseOnCancel), which the test checks.
//   - kcm-adc: kube-controller-manager with adc inside on two control plane nodes, its own
//     Lease kube-system/kube-controller-manager with its defaults (15 s, 10 s, 2 s) and the
//     alpha gate ControllerManagerReleaseLeaderElectionLockOnExit the runbook asks for;
//     whether it releases the Lease on SIGTERM is reported, not asserted.
//
// Judged from the audit log as the handover is: over the upgrade, no VolumeAttachment created
// or deleted but the new pod's, no volume dropped from any node's status.volumesAttached,
// every pod still Running. Reported, never asserted: SIGTERM -> Lease released, released ->
// taken by the new replica, the old leader's last write -> the new one's first (a pod the old
// leader attached just before the SIGTERM makes that last write recent), Lease taken -> the
// new leader's first write, and the new pod's attach.
func TestClusterHandoverRollingUpgrade(t *testing.T) {
	t.Parallel()
	inADCModes(t, runUpgrade)
}

// replica is one replica of the upgrade: adc's process, or kube-controller-manager's.
type replica interface {
	Start() error
	Stop() error
}

// upgrade says, per mode, what the replicas are and which Lease they elect on.
type upgrade struct {
	leaseNS, leaseName string
	// user is the user adc's writes are made as.
	user string
	// newReplica prepares a replica named name; ready waits until it serves.
	newReplica func(name string) (replica, func(context.Context) error, error)
}

func runUpgrade(t *testing.T, md cluster.Mode) {
	ctx := t.Context()
	var u upgrade
	var h *handover
	switch md {
	case cluster.Standalone:
		h = startHandover(t, md, "up", cluster.Standalone.Controllers())
		s := h.mc.stack
		u = upgrade{leaseNS: adcLeaseNS, leaseName: adcLeaseName, user: s.ADCUser(),
			newReplica: func(name string) (replica, func(context.Context) error, error) {
				r, err := s.NewADCReplica(name, "--leader-elect-namespace", adcLeaseNS)
				if err != nil {
					return nil, nil, err
				}
				return r, r.WaitReady, nil
			}}
	case cluster.KCMADC:
		h = startHandover(t, md, "up", cluster.KCMADC.Controllers())
		s := h.mc.stack
		// The harness runs one kube-controller-manager without leader election; both
		// replicas of the upgrade elect.
		kcm := s.ControllerManager()
		if err := kcm.Stop(); err != nil {
			t.Fatal(err)
		}
		args := kcm.Args()
		for i, a := range args {
			if a == "--leader-elect=false" {
				args[i] = "--leader-elect=true"
			}
		}
		// As the upgrade runbook says (docs/operating.md): without this alpha gate
		// kube-controller-manager v1.36 keeps its Lease on exit and the new leader waits the
		// lease duration out (17-22 s measured without it).
		args = append(args, "--feature-gates=ControllerManagerReleaseLeaderElectionLockOnExit=true")
		kcm.SetArgs(args...)
		u = upgrade{leaseNS: "kube-system", leaseName: "kube-controller-manager",
			user: "system:serviceaccount:kube-system:attachdetach-controller",
			newReplica: func(name string) (replica, func(context.Context) error, error) {
				if name == "kcm-old" {
					return kcm, s.WaitControllerManagerHealthy, nil
				}
				r, err := s.NewControllerManagerReplica(name)
				if err != nil {
					return nil, nil, err
				}
				return r, r.WaitHealthy, nil
			}}
	}
	s := h.mc.stack
	names := map[cluster.Mode][2]string{cluster.Standalone: {"adc-old", "adc-new"}, cluster.KCMADC: {"kcm-old", "kcm-new"}}[md]
	old, oldReady, err := u.newReplica(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := oldReady(ctx); err != nil {
		t.Fatal(err)
	}
	oldID := waitLeader(ctx, t, h, u, func(id string) bool { return id != "" })
	t.Logf("%s leads as %s", names[0], oldID)
	h.deploy(ctx, t, "adc")

	neu, neuReady, err := u.newReplica(names[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := neu.Start(); err != nil {
		t.Fatal(err)
	}
	if err := neuReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The new pod's claim is bound beforehand (in the kcm-adc mode the PV controller pauses
	// with the leader too), so that its pod waits for nothing but the attach.
	v := h.createVolume(ctx, t, "new-upgrade", h.nodes[1], harness.DefaultDriver)
	// A pod the old leader attaches just before the SIGTERM.
	h.attachNew(ctx, t, "upgrade (before SIGTERM)", "pre-upgrade", h.nodes[0], harness.DefaultDriver, "adc")

	from := time.Now()
	if err := old.Stop(); err != nil {
		t.Errorf("%s on SIGTERM: %v", names[0], err)
	}
	exited := time.Now()
	created := h.createPodOf(ctx, t, v)
	newID := waitLeader(ctx, t, h, u, func(id string) bool { return id != "" && id != oldID })
	t.Logf("%s leads as %s", names[1], newID)
	h.waitAttached(ctx, t, "upgrade", v, created, "adc")

	time.Sleep(settle)
	to := time.Now()
	audit, err := cluster.ReadAudit(s.Stack)
	if err != nil {
		t.Fatal(err)
	}
	checkAudit(t, md, "upgrade", audit, from, to, []hoVol{v}, nil)
	h.checkPods(ctx, t)

	// The figures, from the audit log.
	leases, err := audit.LeaseWrites(u.leaseNS, u.leaseName)
	if err != nil {
		t.Fatal(err)
	}
	var released, acquired time.Time
	for _, l := range leases {
		r := l.Request.Received
		switch {
		case released.IsZero() && l.Holder == "" && !r.Before(from):
			released = r
		case acquired.IsZero() && l.Holder == newID:
			acquired = r
		}
	}
	figure(t, md, "upgrade: SIGTERM -> old replica exited", since(from, exited))
	switch {
	case !released.IsZero():
		figure(t, md, "upgrade: SIGTERM -> Lease released", since(from, released))
	case md == cluster.Standalone:
		t.Errorf("%s did not release the Lease %s/%s on SIGTERM (writes: %s)", names[0], u.leaseNS, u.leaseName, describeLeases(leases))
	default:
		figure(t, md, "upgrade: SIGTERM -> Lease released", "never (taken over once expired)")
	}
	if acquired.IsZero() {
		t.Fatalf("%s never took the Lease (writes: %s)", names[1], describeLeases(leases))
	}
	if !released.IsZero() {
		figure(t, md, "upgrade: Lease released -> taken by the new replica", since(released, acquired))
	}
	figure(t, md, "upgrade: SIGTERM -> Lease taken by the new replica", since(from, acquired))
	var lastOld, firstNew auditlog.Request
	for _, r := range audit.Writes(u.user, time.Time{}, time.Time{}, "volumeattachments", "nodes/status") {
		switch {
		case r.Received.Before(exited):
			lastOld = r
		case firstNew.Received.IsZero() && !r.Received.Before(acquired):
			firstNew = r
		}
	}
	if lastOld.Received.IsZero() || firstNew.Received.IsZero() {
		t.Fatalf("no write of adc before the SIGTERM (%v) or after the takeover (%v)", lastOld, firstNew)
	}
	t.Logf("old leader's last write: %s at %s; new leader's first: %s at %s", lastOld, lastOld.Received.Format(time.StampMilli), firstNew, firstNew.Received.Format(time.StampMilli))
	figure(t, md, "upgrade: old leader's last write -> new leader's first", since(lastOld.Received, firstNew.Received))
	figure(t, md, "upgrade: Lease taken -> new leader's first write", since(acquired, firstNew.Received))
}

// The Lease of adc's leader election, as deploy/kubernetes names it.
const (
	adcLeaseNS   = "adc-system"
	adcLeaseName = "adc"
)

// waitLeader waits until the holder of u's Lease satisfies ok and returns it.
func waitLeader(ctx context.Context, t *testing.T, h *handover, u upgrade, ok func(string) bool) string {
	t.Helper()
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := h.mc.stack.Client.CoordinationV1().Leases(u.leaseNS).Get(ctx, u.leaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		holder = ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return ok(holder), nil
	})
	if err != nil {
		t.Fatalf("Lease %s/%s: holder %q: %v", u.leaseNS, u.leaseName, holder, err)
	}
	return holder
}

func describeLeases(ls []cluster.LeaseWrite) string {
	out := ""
	for _, l := range ls {
		out += fmt.Sprintf("\n  %s %s holder %q", l.Request.Received.Format(time.StampMilli), l.Request.Verb, l.Holder)
	}
	return out
}
