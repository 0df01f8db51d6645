package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	storageinformers "k8s.io/client-go/informers/storage"
	storagev1informers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/simulator"
)

// lateDeleteReturn is a VolumeAttachment writer whose Delete returns only after the
// controller's own VolumeAttachment delete handler has returned for the deleted object. It
// forces the event order that a slow API response produces by chance in a busy cluster: the
// informer's delete event handled in full before the Delete call returns.
type lateDeleteReturn struct {
	volumeattach.AttachmentWriter
	handled *deleteHandled
}

func (w *lateDeleteReturn) Delete(ctx context.Context, name string, uid types.UID) error {
	if err := w.AttachmentWriter.Delete(ctx, name, uid); err != nil {
		return err
	}
	select {
	case <-w.handled.ch(name, uid):
		w.handled.forced(name)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for adc's delete handler of VolumeAttachment %s: %w", name, ctx.Err())
	}
}

// deleteHandled records, per VolumeAttachment name and UID, that adc's delete handler for it
// returned, and which Delete calls waited for that.
type deleteHandled struct {
	mu      sync.Mutex
	done    map[string]chan struct{} // name/uid -> closed when adc's handler returned
	ordered []string                 // Delete calls that returned after the handler, in order
}

func (d *deleteHandled) ch(name string, uid types.UID) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = map[string]chan struct{}{}
	}
	key := name + "/" + string(uid)
	if d.done[key] == nil {
		d.done[key] = make(chan struct{})
	}
	return d.done[key]
}

func (d *deleteHandled) handlerReturned(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return
	}
	// A Delete without a UID precondition waits under the name alone.
	for _, ch := range []chan struct{}{d.ch(va.Name, va.UID), d.ch(va.Name, "")} {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

func (d *deleteHandled) forced(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ordered = append(d.ordered, name)
}

func (d *deleteHandled) forcedDeletes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ordered...)
}

// hookVADeletes wraps an informer factory so that every handler registered on its
// VolumeAttachment informer reports to d when its OnDelete has returned.
func hookVADeletes(d *deleteHandled) func(informers.SharedInformerFactory) informers.SharedInformerFactory {
	return func(f informers.SharedInformerFactory) informers.SharedInformerFactory {
		return hookedFactory{SharedInformerFactory: f, d: d}
	}
}

type hookedFactory struct {
	informers.SharedInformerFactory
	d *deleteHandled
}

func (f hookedFactory) Storage() storageinformers.Interface {
	return hookedStorage{Interface: f.SharedInformerFactory.Storage(), d: f.d}
}

type hookedStorage struct {
	storageinformers.Interface
	d *deleteHandled
}

func (s hookedStorage) V1() storagev1informers.Interface {
	return hookedStorageV1{Interface: s.Interface.V1(), d: s.d}
}

type hookedStorageV1 struct {
	storagev1informers.Interface
	d *deleteHandled
}

func (s hookedStorageV1) VolumeAttachments() storagev1informers.VolumeAttachmentInformer {
	return hookedVAInformer{VolumeAttachmentInformer: s.Interface.VolumeAttachments(), d: s.d}
}

type hookedVAInformer struct {
	storagev1informers.VolumeAttachmentInformer
	d *deleteHandled
}

func (i hookedVAInformer) Informer() cache.SharedIndexInformer {
	return hookedSharedInformer{SharedIndexInformer: i.VolumeAttachmentInformer.Informer(), d: i.d}
}

type hookedSharedInformer struct {
	cache.SharedIndexInformer
	d *deleteHandled
}

func (i hookedSharedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(hookedHandler{ResourceEventHandler: h, d: i.d})
}

func (i hookedSharedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(hookedHandler{ResourceEventHandler: h, d: i.d}, resync)
}

func (i hookedSharedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(hookedHandler{ResourceEventHandler: h, d: i.d}, o)
}

type hookedHandler struct {
	cache.ResourceEventHandler
	d *deleteHandled
}

func (h hookedHandler) OnDelete(obj any) {
	h.ResourceEventHandler.OnDelete(obj)
	h.d.handlerReturned(obj)
}

// A VolumeAttachment deleted by adc and re-created under the same name (the same volume's pod
// comes back to the node) is a new attachment: it is listed in node status once attached, even
// when the informer delivered the old one's delete before adc's Delete call returned.
// Issue #14, defect 2: the delete expectation outlived the delete event and kept the new
// VolumeAttachment "deleting" (never listed) for a minute.
func TestRecreatedVolumeAttachmentIsNotDeleting(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	handled := &deleteHandled{}
	e.startControllerOn(e.client, adc.Options{
		Attachments: &lateDeleteReturn{AttachmentWriter: &volumeattach.ClientAttachmentWriter{Client: e.client}, handled: handled},
	}, hookVADeletes(handled))
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
	// The order the test is about: adc's Delete of the first VolumeAttachment returned only
	// after adc's delete handler had returned for it.
	e.eventually("adc's Delete of the first VolumeAttachment returned after its delete handler", 10*time.Second, func() (bool, string) {
		got := handled.forcedDeletes()
		return len(got) == 1 && got[0] == name, fmt.Sprintf("Delete calls returned after the handler: %v", got)
	})

	e.pod("second", node, []string{claim})
	e.eventually("VolumeAttachment re-created", 10*time.Second, func() (bool, string) {
		uid := e.vaUIDs(name)[name]
		return uid != "" && uid != first, "uid " + uid
	})
	e.eventually("re-created volume listed in node status", 10*time.Second, e.listedOnNode(node, unique))
}
