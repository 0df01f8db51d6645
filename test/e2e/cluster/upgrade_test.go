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

// A rolling upgrade of adc (issue 42, item 3), as the Deployment of deploy/kubernetes does
// it: two replicas elect a leader on the Lease adc-system/adc with the shipped flags (lease
// 15 s, renew deadline 10 s, retry period 5 s); the old version leads and has attached every
// volume (a StatefulSet of three and three plain pods, one a migrated gce-pd volume), the new
// version stands by, then the old one gets SIGTERM, as the kubelet sends it when the
// Deployment replaces its Pod. It releases the Lease on its way out (ReleaseOnCancel) and must
// exit 0; the new one takes the Lease and carries on: a pod created right after the SIGTERM
// is attached by it. Judged from the audit log as the handover is: over the upgrade, no
// VolumeAttachment created or deleted but the new pod's, no volume dropped from any node's
// status.volumesAttached, every pod still Running. Reported, never asserted: SIGTERM -> Lease
// released, released -> taken by the new replica, the old leader's last write -> the new
// one's first (a pod the old leader attached just before the SIGTERM makes that last write
// recent), and the new pod's attach.
func TestClusterHandoverRollingUpgrade(t *testing.T) {
	t.Parallel()
	if clusters[cluster.Standalone] == nil {
		t.Skipf("the rolling upgrade is of adc's Deployment: mode %s not selected", cluster.Standalone)
	}
	md := cluster.Standalone
	h := startHandover(t, md, "up", cluster.Standalone.Controllers())
	ctx := t.Context()
	s := h.mc.stack
	leaseArgs := []string{"--leader-elect-namespace", leaseNS}
	old, err := s.NewADCReplica("adc-old", leaseArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := old.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	oldID := waitLeader(ctx, t, h, func(id string) bool { return id != "" })
	t.Logf("adc-old leads as %s", oldID)
	h.deploy(ctx, t, "adc")

	neu, err := s.NewADCReplica("adc-new", leaseArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := neu.Start(); err != nil {
		t.Fatal(err)
	}
	if err := neu.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The new pod's claim is bound beforehand, so that its pod waits for nothing but the
	// attach.
	v := h.createVolume(ctx, t, "new-upgrade", h.nodes[1], harness.DefaultDriver)
	// A pod the old leader attaches just before the SIGTERM.
	h.attachNew(ctx, t, "upgrade (before SIGTERM)", "pre-upgrade", h.nodes[0], harness.DefaultDriver, "adc")

	from := time.Now()
	if err := old.Stop(); err != nil {
		t.Errorf("adc-old on SIGTERM: %v", err)
	}
	exited := time.Now()
	created := h.createPodOf(ctx, t, v)
	newID := waitLeader(ctx, t, h, func(id string) bool { return id != "" && id != oldID })
	t.Logf("adc-new leads as %s", newID)
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
	leases, err := audit.LeaseWrites(leaseNS, leaseName)
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
	if released.IsZero() {
		t.Errorf("adc-old did not release the Lease %s/%s on SIGTERM (writes: %s)", leaseNS, leaseName, describeLeases(leases))
	} else {
		figure(t, md, "upgrade: SIGTERM -> Lease released", since(from, released))
		figure(t, md, "upgrade: SIGTERM -> old replica exited", since(from, exited))
	}
	if acquired.IsZero() {
		t.Fatalf("adc-new never took the Lease (writes: %s)", describeLeases(leases))
	}
	if !released.IsZero() {
		figure(t, md, "upgrade: Lease released -> taken by the new replica", since(released, acquired))
	}
	decisions := []string{"volumeattachments", "nodes/status"}
	var lastOld, firstNew auditlog.Request
	for _, r := range audit.Writes(s.ADCUser(), time.Time{}, time.Time{}, decisions...) {
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
	leaseNS   = "adc-system"
	leaseName = "adc"
)

// waitLeader waits until the holder of adc's Lease satisfies ok and returns it.
func waitLeader(ctx context.Context, t *testing.T, h *handover, ok func(string) bool) string {
	t.Helper()
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := h.mc.stack.Client.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
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
		t.Fatalf("Lease %s/%s: holder %q: %v", leaseNS, leaseName, holder, err)
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
