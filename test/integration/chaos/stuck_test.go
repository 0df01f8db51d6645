package chaos

import (
	"context"
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
