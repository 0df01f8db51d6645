package harness

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/test/testinformers"
)

// Timeline records, from watches, when the stack's objects reached the states a user waits
// for: a pod Running, a VolumeAttachment attached, a volume listed in node
// status.volumesAttached. Times are the harness's clock when the watch event arrived, so they
// compare with times taken around API calls (e.g. just before a pod's Create).
type Timeline struct {
	mu         sync.Mutex
	created    map[string]time.Time // ns/pod -> Create called
	running    map[string]time.Time // ns/pod -> first seen Running
	vaAttached map[string]time.Time // VA name -> first seen attached
	listed     map[string]time.Time // VA name of (handle, driver, node) -> first seen in volumesAttached
	inUse      map[string]time.Time // VA name of (handle, driver, node) -> first seen in volumesInUse
}

// WatchTimeline starts watching pods, VolumeAttachments and nodes until ctx ends. It returns
// once the watches are synced.
func (s *Stack) WatchTimeline(ctx context.Context) (*Timeline, error) {
	tl := &Timeline{created: map[string]time.Time{}, running: map[string]time.Time{}, vaAttached: map[string]time.Time{}, listed: map[string]time.Time{}, inUse: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactory(s.Client, 0)
	pods := factory.Core().V1().Pods().Informer()
	vas := factory.Storage().V1().VolumeAttachments().Informer()
	nodes := factory.Core().V1().Nodes().Informer()
	on := func(f func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		f   func(any)
	}{
		{pods, func(obj any) {
			if p, ok := obj.(*v1.Pod); ok && p.Status.Phase == v1.PodRunning {
				tl.first(tl.running, p.Namespace+"/"+p.Name)
			}
		}},
		{vas, func(obj any) {
			if va, ok := obj.(*storagev1.VolumeAttachment); ok && va.Status.Attached {
				tl.first(tl.vaAttached, va.Name)
			}
		}},
		{nodes, func(obj any) {
			n, ok := obj.(*v1.Node)
			if !ok {
				return
			}
			for _, av := range n.Status.VolumesAttached {
				if va, ok := vaNameOf(string(av.Name), n.Name); ok {
					tl.first(tl.listed, va)
				}
			}
			for _, name := range n.Status.VolumesInUse {
				if va, ok := vaNameOf(string(name), n.Name); ok {
					tl.first(tl.inUse, va)
				}
			}
		}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(on(h.f)); err != nil {
			return nil, fmt.Errorf("harness: timeline handler: %w", err)
		}
	}
	if err := testinformers.Start(ctx, factory); err != nil {
		return nil, fmt.Errorf("harness: timeline: %w", err)
	}
	return tl, nil
}

// vaNameOf returns the VolumeAttachment name of a CSI unique volume name on node.
func vaNameOf(unique, node string) (string, bool) {
	rest, ok := strings.CutPrefix(unique, "kubernetes.io/csi/")
	if !ok {
		return "", false
	}
	driver, handle, ok := strings.Cut(rest, "^")
	return VAName(handle, driver, node), ok
}

func (tl *Timeline) first(m map[string]time.Time, key string) {
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := m[key]; !ok {
		m[key] = now
	}
}

// PodCreated records when the test asked for pod ns/name (call it just before Create).
func (tl *Timeline) PodCreated(ns, name string, at time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.created[ns+"/"+name] = at
}

// PodStartup returns, for every recorded pod that reached Running, the time from its
// creation to Running.
func (tl *Timeline) PodStartup() []time.Duration {
	return tl.between(tl.created, tl.running)
}

// AttachedToListed returns, for every VolumeAttachment seen attached and then listed in its
// node's status.volumesAttached, the time between the two.
func (tl *Timeline) AttachedToListed() []time.Duration {
	return tl.between(tl.vaAttached, tl.listed)
}

// between returns, for every key in both from and to, the time from one to the other.
func (tl *Timeline) between(from, to map[string]time.Time) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []time.Duration
	for k, a := range from {
		if b, ok := to[k]; ok {
			out = append(out, b.Sub(a))
		}
	}
	return out
}

// InUseBeforeListed counts the volumes listed in node status.volumesAttached, and how many of
// them the kubelet reported in status.volumesInUse before adc listed them as attached.
func (tl *Timeline) InUseBeforeListed() (before, listed int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for va, l := range tl.listed {
		listed++
		if u, ok := tl.inUse[va]; ok && u.Before(l) {
			before++
		}
	}
	return before, listed
}

// Percentile returns the p-th percentile (0-100, nearest rank) of ds, 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}
