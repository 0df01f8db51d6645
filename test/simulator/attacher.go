package simulator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// ExternalAttacher is a SIMULATED CSI external-attacher: for every VolumeAttachment of the
// drivers it serves, it marks the attachment attached (or failed) in the status, as the real
// external-attacher does after ControllerPublishVolume. It adds no finalizer, so a deleted
// VolumeAttachment is gone at once (the detach is instant).
type ExternalAttacher struct {
	// Client writes VolumeAttachment status.
	Client kubernetes.Interface
	// Drivers are the driver names served; empty serves every driver.
	Drivers []string
	// AttachError, when set and returning non-empty, makes the attach of that
	// VolumeAttachment fail with the message instead of succeeding.
	AttachError func(va *storagev1.VolumeAttachment) string
	// Delay is how long an attach takes.
	Delay time.Duration
	// Workers is the number of parallel attaches (default 4).
	Workers int

	attached atomic.Int64
}

// Attached returns how many attaches the simulator has confirmed.
func (a *ExternalAttacher) Attached() int64 { return a.attached.Load() }

func (a *ExternalAttacher) serves(driver string) bool {
	if len(a.Drivers) == 0 {
		return true
	}
	for _, d := range a.Drivers {
		if d == driver {
			return true
		}
	}
	return false
}

// Run serves VolumeAttachments until ctx ends. It returns once its cache has synced, with the
// work running in the background.
func (a *ExternalAttacher) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(a.Client, 0)
	inf := factory.Storage().V1().VolumeAttachments()
	lister := inf.Lister()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simulated_external_attacher"})
	enqueue := func(obj interface{}) {
		if va, ok := obj.(*storagev1.VolumeAttachment); ok && a.serves(va.Spec.Attacher) && !va.Status.Attached && va.DeletionTimestamp == nil {
			queue.Add(va.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur interface{}) { enqueue(cur) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return fmt.Errorf("simulated external-attacher: cache did not sync")
	}
	workers := a.Workers
	if workers <= 0 {
		workers = 4
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				name, quit := queue.Get()
				if quit {
					return
				}
				if err := a.attach(ctx, lister.Get, name); err != nil {
					klog.FromContext(ctx).V(4).Info("Simulated external-attacher retrying", "volumeAttachment", name, "err", err)
					queue.AddRateLimited(name)
				} else {
					queue.Forget(name)
				}
				queue.Done(name)
			}
		}()
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	}()
	return nil
}

func (a *ExternalAttacher) attach(ctx context.Context, get func(string) (*storagev1.VolumeAttachment, error), name string) error {
	va, err := get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || va.Status.Attached || va.DeletionTimestamp != nil {
		return err
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-ctx.Done():
			return nil
		}
	}
	va = va.DeepCopy()
	if msg := ""; a.AttachError != nil {
		if msg = a.AttachError(va); msg != "" {
			if va.Status.AttachError != nil && va.Status.AttachError.Message == msg {
				return nil
			}
			va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: msg}
			_, err = a.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
			return ignoreGone(err)
		}
	}
	va.Status.Attached = true
	va.Status.AttachError = nil
	va.Status.AttachmentMetadata = map[string]string{"simulated": "true"}
	_, err = a.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err == nil {
		a.attached.Add(1)
	}
	return ignoreGone(err)
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
