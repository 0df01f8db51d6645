package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/simulator"
)

// lateDeleteReturn is a VolumeAttachment writer whose Delete returns only after the
// controller's own informer has seen the VolumeAttachment go (the detach operation ended). It
// forces the event order that a slow API response produces by chance in a busy cluster: the
// informer's delete event before the Delete call returns.
type lateDeleteReturn struct {
	volumeattach.AttachmentWriter
	ended *detachEnds
}

func (w *lateDeleteReturn) Delete(ctx context.Context, name string, uid types.UID) error {
	if err := w.AttachmentWriter.Delete(ctx, name, uid); err != nil {
		return err
	}
	w.ended.wait(ctx, name)
	return nil
}

// detachEnds is an adc.Observer that records which VolumeAttachments' detaches the controller
// saw end (its informer delivered the delete).
type detachEnds struct {
	mu    sync.Mutex
	ended map[string]chan struct{}
}

func (d *detachEnds) ch(name string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended == nil {
		d.ended = map[string]chan struct{}{}
	}
	if d.ended[name] == nil {
		d.ended[name] = make(chan struct{})
	}
	return d.ended[name]
}

func (d *detachEnds) OperationCompleted(op adc.Operation) {
	if op.Kind != adc.OperationDetach {
		return
	}
	// A detach of an attachment whose attach adc did not see start is named by its
	// VolumeAttachment; otherwise by the unique name (the wait then ends on its timeout).
	ch := d.ch(op.Volume)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (d *detachEnds) ForcedDetach(string) {}

func (d *detachEnds) NodeRead(string) {}

func (d *detachEnds) NodeFlip(string) {}

func (d *detachEnds) wait(ctx context.Context, name string) {
	select {
	case <-d.ch(name):
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
	// The delete handler clears its memory right after it ends the operation.
	time.Sleep(100 * time.Millisecond)
}

// A VolumeAttachment deleted by adc and re-created under the same name (the same volume's pod
// comes back to the node) is a new attachment: it is listed in node status once attached, even
// when the informer delivered the old one's delete before adc's Delete call returned.
// Issue #14, defect 2: the delete expectation outlived the delete event and kept the new
// VolumeAttachment "deleting" (never listed) for a minute.
func TestRecreatedVolumeAttachmentIsNotDeleting(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	ends := &detachEnds{}
	e.startController(adc.Options{
		Observer:    ends,
		Attachments: &lateDeleteReturn{AttachmentWriter: &volumeattach.ClientAttachmentWriter{Client: e.client}, ended: ends},
	})
	node := e.node("n1", true)
	e.csiNode(node, "", testDriver)
	claim := e.boundClaim(e.csiPV("vol", testDriver, "recreate-1"))
	name := vaName("recreate-1", testDriver, node)
	unique := csiUnique(testDriver, "recreate-1")

	e.pod("first", node, []string{claim})
	e.eventually("first pod's volume listed", 10*time.Second, e.listedOnNode(node, unique))
	first := e.vaUIDs(name)[name]

	e.deletePod("first")
	e.eventually("VolumeAttachment of the first pod deleted", 10*time.Second, e.vaGone(name))

	e.pod("second", node, []string{claim})
	e.eventually("VolumeAttachment re-created", 10*time.Second, func() (bool, string) {
		uid := e.vaUIDs(name)[name]
		return uid != "" && uid != first, "uid " + uid
	})
	e.eventually("re-created volume listed in node status", 10*time.Second, e.listedOnNode(node, unique))
}
