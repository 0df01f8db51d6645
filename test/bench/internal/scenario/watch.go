package scenario

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// watcher records, from the harness's own watches, when each VolumeAttachment first
// appears, when its status.attached first turns true, when it is gone, and when each volume
// is first listed in its Node's status.volumesAttached.
type watcher struct {
	total int

	mu       sync.Mutex
	created  map[string]time.Time // by VolumeAttachment name
	attached map[string]time.Time // by unique volume name
	listed   map[string]time.Time // by unique volume name
	gone     int
	changed  chan struct{} // closed and replaced whenever a count changes
}

func newWatcher(total int) *watcher {
	return &watcher{total: total, created: map[string]time.Time{}, attached: map[string]time.Time{},
		listed: map[string]time.Time{}, changed: make(chan struct{})}
}

// start registers the handlers and waits for the caches.
func (w *watcher) start(ctx context.Context, client kubernetes.Interface) {
	f := informers.NewSharedInformerFactory(client, 0)
	onVA := func(obj interface{}) {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.created[va.Name]; !ok {
			w.created[va.Name] = now
			w.notify()
		}
		if va.Status.Attached && va.Spec.Source.PersistentVolumeName != nil {
			name := uniqueNameOfPV(*va.Spec.Source.PersistentVolumeName)
			if _, ok := w.attached[name]; !ok {
				w.attached[name] = now
			}
		}
	}
	_, _ = f.Storage().V1().VolumeAttachments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onVA,
		UpdateFunc: func(_, cur interface{}) { onVA(cur) },
		DeleteFunc: func(interface{}) {
			w.mu.Lock()
			w.gone++
			w.notify()
			w.mu.Unlock()
		},
	})
	onNode := func(obj interface{}) {
		n, ok := obj.(*v1.Node)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, av := range n.Status.VolumesAttached {
			if _, ok := w.listed[string(av.Name)]; !ok {
				w.listed[string(av.Name)] = now
				w.notify()
			}
		}
	}
	_, _ = f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, cur interface{}) { onNode(cur) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

func (w *watcher) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// counts returns VolumeAttachments seen, volumes listed, VolumeAttachments gone, and a
// channel closed at the next change.
func (w *watcher) counts() (created, listed, gone int, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.created), len(w.listed), w.gone, w.changed
}

// attachResult fills the attach phase's latencies, counted from start.
func (w *watcher) attachResult(r *Result, start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first, last time.Time
	for _, t := range w.created {
		if t.After(last) {
			last = t
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	r.FirstVolumeAttachment, r.AllVolumeAttachments = first.Sub(start), last.Sub(start)
	fromStart := make([]time.Duration, 0, len(w.listed))
	toListed := make([]time.Duration, 0, len(w.listed))
	last = time.Time{}
	for name, t := range w.listed {
		if t.After(last) {
			last = t
		}
		fromStart = append(fromStart, t.Sub(start))
		d := time.Duration(0)
		if a, ok := w.attached[name]; ok && t.After(a) {
			// A volume listed before the harness's own VolumeAttachment watch delivered the
			// attach (the two watches race by microseconds) counts as zero.
			d = t.Sub(a)
		}
		toListed = append(toListed, d)
	}
	r.AllListed = last.Sub(start)
	r.AllAttached = latest(w.attached).Sub(start)
	attached := make([]time.Duration, 0, len(w.attached))
	for _, t := range w.attached {
		attached = append(attached, t.Sub(start))
	}
	r.AttachedP50 = percentile(attached, 50)
	r.ListedP50, r.ListedP90 = percentile(fromStart, 50), percentile(fromStart, 90)
	r.AttachedToListedP50, r.AttachedToListedP99 = percentile(toListed, 50), percentile(toListed, 99)
}

// percentile is the nearest-rank p-th percentile; it sorts d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(math.Ceil(p/100*float64(len(d)))) - 1
	return d[max(0, min(i, len(d)-1))]
}

// lastCreated is when the last VolumeAttachment seen was first seen.
func (w *watcher) lastCreated() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return latest(w.created)
}

// latest is the latest of times, zero if none.
func latest(times map[string]time.Time) time.Time {
	var last time.Time
	for _, t := range times {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// createdAt is when the VolumeAttachment name was first seen.
func (w *watcher) createdAt(name string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.created[name]
	return t, ok
}

// listedAt is when the volume unique was first listed in a Node's status.
func (w *watcher) listedAt(unique string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.listed[unique]
	return t, ok
}
