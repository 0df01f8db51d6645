package chaos

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// describeDeleting logs every VolumeAttachment still there after its deletion, with what the
// simulated external-attacher did with it: a run that does not converge then says whether a
// detach failed, never started, or never saw the deletion.
func describeDeleting(t *testing.T, cp *framework.ControlPlane, attacher *simulator.ExternalAttacher) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := cp.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing VolumeAttachments to describe the stuck ones: %v", err)
		return
	}
	for _, va := range list.Items {
		if va.DeletionTimestamp == nil {
			continue
		}
		detachErr := ""
		if va.Status.DetachError != nil {
			detachErr = va.Status.DetachError.Message
		}
		t.Logf("deleting VA %s on %s: deleted %s ago, finalizers %v, attached=%v, detachError %q, resourceVersion %s",
			va.Name, va.Spec.NodeName, time.Since(va.DeletionTimestamp.Time).Round(time.Second), va.Finalizers, va.Status.Attached, detachErr, va.ResourceVersion)
		if tr := attacher.Trace(va.Name); tr != nil {
			t.Logf("  simulated attacher: enqueued %d, syncs %d, in flight %v, last sync %s..%s, read rv %s, last error %q",
				tr.Enqueued, tr.Syncs, tr.InFlight, tr.LastStart.Format("15:04:05.000"), tr.LastEnd.Format("15:04:05.000"), tr.LastRV, tr.LastErr)
		} else {
			t.Logf("  simulated attacher: never queued it")
		}
	}
}

// explainStuck runs `adc explain` (as an operator would, with the leader's memory) for the
// first pods the convergence check found without their volumes, so that a run that does
// not converge says why from adc's own point of view, with no log to dig through.
func explainStuck(t *testing.T, cp *framework.ControlPlane, reps *replicas, problems []Violation) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kubeconfig := filepath.Join(t.TempDir(), "explain-kubeconfig")
	if err := framework.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		t.Logf("writing a kubeconfig for adc explain: %v", err)
		return
	}
	args := []string{"explain", "--kubeconfig", kubeconfig, "--max-wait-for-unmount", maxWait.String()}
	if addr := reps.LeaderHTTPAddr(ctx); addr != "" {
		args = append(args, "--controller", "http://"+addr)
	}
	seen := map[string]bool{}
	for _, p := range problems {
		kind, name := stuckTarget(p.Message)
		if kind == "" || seen[kind+" "+name] || len(seen) == 3 {
			continue
		}
		seen[kind+" "+name] = true
		out, err := exec.CommandContext(ctx, adcBinary, append(args, kind, name)...).CombinedOutput()
		t.Logf("adc explain %s %s (err %v):\n%s", kind, name, err, out)
	}
}

// stuckTarget is what `adc explain` explains for a convergence problem: the pod of "pod
// NAMESPACE/NAME on NODE: ...", the PersistentVolume of "VA NAME (PV on NODE) left ..." (a
// VolumeAttachment no pod uses, whose PersistentVolume exists); "" for anything else.
func stuckTarget(message string) (kind, name string) {
	f := strings.Fields(message)
	switch {
	case len(f) >= 2 && f[0] == "pod":
		return "pod", f[1]
	case len(f) >= 4 && f[0] == "VA" && f[3] == "on":
		pv := strings.TrimPrefix(f[2], "(")
		if pv != "" && !strings.HasPrefix(pv, "<") && !strings.HasPrefix(pv, "inline:") {
			return "pv", pv
		}
	}
	return "", ""
}

// dumpLeaderStacks makes the leading replica print its goroutines (SIGQUIT: the Go runtime
// dumps every stack and exits) and logs those that run adc's code and are not idle waiting
// for work, so that a run that does not converge shows a worker stuck on a call or a lock.
// The leader is gone afterwards; call it last.
func dumpLeaderStacks(t *testing.T, reps *replicas) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := reps.leader(ctx)
	if err != nil || p == nil {
		t.Logf("no leader to dump the goroutines of (%v)", err)
		return
	}
	before := len(p.out.String())
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Logf("asking replica %d/%d for its goroutines: %v", p.slot, p.gen, err)
		return
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Logf("replica %d/%d did not exit after SIGQUIT", p.slot, p.gen)
	}
	busy := busyGoroutines(p.out.String()[before:])
	t.Logf("replica %d/%d (the leader): %d goroutines in adc's code not waiting for work:\n%s", p.slot, p.gen, len(busy), strings.Join(busy, "\n\n"))
}

// busyGoroutines picks from a Go stack dump the goroutines with a frame of adc's packages,
// leaving out workers parked in their queue's Get and informer plumbing.
func busyGoroutines(dump string) []string {
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || !strings.Contains(g, "migration-aware/adc/pkg/") {
			continue
		}
		if strings.Contains(g, "workqueue.(*Typed[...]).Get(") { // inlined or not
			continue
		}
		out = append(out, g)
	}
	return out
}
