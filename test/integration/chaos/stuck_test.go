package chaos

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
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
		// "pod NAMESPACE/NAME on NODE: ..."
		f := strings.Fields(p.Message)
		if len(f) < 2 || f[0] != "pod" || seen[f[1]] || len(seen) == 3 {
			continue
		}
		seen[f[1]] = true
		out, err := exec.CommandContext(ctx, adcBinary, append(args, "pod", f[1])...).CombinedOutput()
		t.Logf("adc explain pod %s (err %v):\n%s", f[1], err, out)
	}
}
