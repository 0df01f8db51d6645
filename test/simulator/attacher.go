package simulator

import (
	"context"
	"fmt"
	"strings"
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
// external-attacher does after ControllerPublishVolume. By default it adds no finalizer, so a
// deleted VolumeAttachment is gone at once (the detach is instant); Finalizer makes it keep
// the real one's finalizer, so that a detach takes time and can fail.
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

	// Finalizer makes the simulator behave like the real external-attacher around deletion:
	// it adds the finalizer external-attacher/<driver with / replaced by -> before it
	// attaches, and on a VolumeAttachment with a deletionTimestamp it detaches (after
	// DetachDelay, failing while DetachError says so) and then removes its finalizer. A
	// deleted VolumeAttachment then stays until the detach is done, as on a real cluster.
	Finalizer bool
	// RetryAttachErrors retries a failed attach with backoff, as the real external-attacher
	// does, instead of waiting for the next change of the VolumeAttachment.
	RetryAttachErrors bool
	// DetachDelay, when set, returns how long the detach of va takes (with Finalizer).
	DetachDelay func(va *storagev1.VolumeAttachment) time.Duration
	// DetachError, when set and returning non-empty, makes the detach of va fail with the
	// message in status.detachError; it is retried with backoff (with Finalizer).
	DetachError func(va *storagev1.VolumeAttachment) string

	attached atomic.Int64
	detached atomic.Int64

	traceMu sync.Mutex
	trace   map[string]*SyncTrace
}

// maxRetryInterval bounds the simulator's retry backoff.
const maxRetryInterval = 2 * time.Second

// SyncTrace is what the simulator last did with one VolumeAttachment, for a test that finds
// the object stuck to say whether the simulator ever saw the change.
type SyncTrace struct {
	// Enqueued counts the informer events that queued the object.
	Enqueued int
	// Syncs counts the syncs started; InFlight is set while one runs.
	Syncs    int
	InFlight bool
	// LastStart and LastEnd time the last sync; LastErr is what it returned.
	LastStart, LastEnd time.Time
	LastErr            string
	// LastRV is the resourceVersion the last sync read from the cache.
	LastRV string
}

// Trace returns a copy of what the simulator did with the VolumeAttachment name, or nil
// when it never queued it.
func (a *ExternalAttacher) Trace(name string) *SyncTrace {
	a.traceMu.Lock()
	defer a.traceMu.Unlock()
	if t := a.trace[name]; t != nil {
		c := *t
		return &c
	}
	return nil
}

func (a *ExternalAttacher) traced(name string, f func(*SyncTrace)) {
	a.traceMu.Lock()
	defer a.traceMu.Unlock()
	if a.trace == nil {
		a.trace = map[string]*SyncTrace{}
	}
	t := a.trace[name]
	if t == nil {
		t = &SyncTrace{}
		a.trace[name] = t
	}
	f(t)
}

// Detached returns how many detaches the simulator has completed (with Finalizer).
func (a *ExternalAttacher) Detached() int64 { return a.detached.Load() }

// FinalizerFor returns the finalizer the real external-attacher of driver puts on its
// VolumeAttachments: external-attacher/ and the driver name with every character other than
// a letter, a digit or "-" replaced by "-" (external-attacher/pd-csi-storage-gke-io).
func FinalizerFor(driver string) string {
	return "external-attacher/" + strings.Map(func(r rune) rune {
		if r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '-'
	}, driver)
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
	// Retries back off from 5 ms to at most maxRetryInterval: the real external-attacher's
	// ceiling is 5 minutes, which would make a test's convergence window measure the
	// simulator's backoff (one object's attach and detach faults add up on one failure
	// count) rather than the controller under test.
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, maxRetryInterval),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simulated_external_attacher"})
	enqueue := func(obj interface{}) {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok || !a.serves(va.Spec.Attacher) {
			return
		}
		if !va.Status.Attached && va.DeletionTimestamp == nil || a.Finalizer && va.DeletionTimestamp != nil && hasFinalizer(va) {
			a.traced(va.Name, func(t *SyncTrace) { t.Enqueued++ })
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
				a.traced(name, func(t *SyncTrace) { t.Syncs, t.InFlight, t.LastStart = t.Syncs+1, true, time.Now() })
				err := a.sync(ctx, func(name string) (*storagev1.VolumeAttachment, error) {
					va, err := lister.Get(name)
					if err == nil {
						a.traced(name, func(t *SyncTrace) { t.LastRV = va.ResourceVersion })
					}
					return va, err
				}, name)
				a.traced(name, func(t *SyncTrace) {
					t.InFlight, t.LastEnd, t.LastErr = false, time.Now(), ""
					if err != nil {
						t.LastErr = err.Error()
					}
				})
				if err != nil {
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

func (a *ExternalAttacher) sync(ctx context.Context, get func(string) (*storagev1.VolumeAttachment, error), name string) error {
	va, err := get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if va.DeletionTimestamp != nil {
		if a.Finalizer && hasFinalizer(va) {
			return a.detach(ctx, va)
		}
		return nil
	}
	if va.Status.Attached {
		return nil
	}
	return a.attach(ctx, va)
}

func (a *ExternalAttacher) attach(ctx context.Context, va *storagev1.VolumeAttachment) error {
	var err error
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-ctx.Done():
			return nil
		}
	}
	va = va.DeepCopy()
	if a.Finalizer && !hasFinalizer(va) {
		va.Finalizers = append(va.Finalizers, FinalizerFor(va.Spec.Attacher))
		if va, err = a.Client.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); err != nil {
			return ignoreGone(err)
		}
	}
	if msg := ""; a.AttachError != nil {
		if msg = a.AttachError(va); msg != "" {
			retry := error(nil)
			if a.RetryAttachErrors {
				retry = fmt.Errorf("simulated attach error: %s", msg)
			}
			if va.Status.AttachError != nil && va.Status.AttachError.Message == msg {
				return retry
			}
			va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: msg}
			_, err = a.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
			if err = ignoreGone(err); err != nil {
				return err
			}
			return retry
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

// detach is the simulated ControllerUnpublishVolume of a deleted VolumeAttachment: it waits
// DetachDelay, reports DetachError while it says so, then removes the finalizer, which lets
// the API server delete the object.
func (a *ExternalAttacher) detach(ctx context.Context, va *storagev1.VolumeAttachment) error {
	va = va.DeepCopy()
	if a.DetachError != nil {
		if msg := a.DetachError(va); msg != "" {
			if va.Status.DetachError == nil || va.Status.DetachError.Message != msg {
				va.Status.DetachError = &storagev1.VolumeError{Time: metav1.Now(), Message: msg}
				if _, err := a.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); ignoreGone(err) != nil {
					return err
				}
			}
			return fmt.Errorf("simulated detach error: %s", msg)
		}
	}
	if a.DetachDelay != nil {
		if d := a.DetachDelay(va); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil
			}
		}
	}
	mine := FinalizerFor(va.Spec.Attacher)
	kept := va.Finalizers[:0]
	for _, f := range va.Finalizers {
		if f != mine {
			kept = append(kept, f)
		}
	}
	va.Finalizers = kept
	if _, err := a.Client.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); err != nil {
		return ignoreGone(err)
	}
	a.detached.Add(1)
	return nil
}

func hasFinalizer(va *storagev1.VolumeAttachment) bool {
	mine := FinalizerFor(va.Spec.Attacher)
	for _, f := range va.Finalizers {
		if f == mine {
			return true
		}
	}
	return false
}
