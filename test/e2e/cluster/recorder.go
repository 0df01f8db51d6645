package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/test/testinformers"
)

// What happened to an object, as a watch saw it.
const (
	PodCreated     = "pod created"
	PodScheduled   = "pod scheduled"
	PodRunning     = "pod running"
	PodTerminating = "pod terminating"
	PodDeleted     = "pod deleted"
	VACreated      = "volumeattachment created"
	VAAttached     = "volumeattachment attached"
	VADeleting     = "volumeattachment deleting"
	VADeleted      = "volumeattachment deleted"
	NodeNotReady   = "node not ready"
	NodeReadyAgain = "node ready"
	NodeTainted    = "node tainted"
	NodeDeleted    = "node deleted"
	ClaimBound     = "claim bound"
)

// Event is one state an object reached, first seen by a watch at At (the recorder's clock,
// comparable with times taken around API calls and with the CSI call logs).
type Event struct {
	At   time.Time
	What string
	// Namespace and Name of the object (Name only for cluster-scoped ones).
	Namespace, Name string
	// UID tells apart a StatefulSet pod from its re-creation under the same name.
	UID types.UID
	// Node is the pod's node, the VolumeAttachment's node; Detail is the taint key of a
	// NodeTainted event, the PV of a VolumeAttachment or of a bound claim.
	Node, Detail string
}

// Recorder records, from watches on pods, claims, VolumeAttachments and nodes, when each
// reached the states a user waits for. Each state of each object (by UID) is recorded once.
type Recorder struct {
	mu     sync.Mutex
	events []Event
	seen   map[string]bool
}

// Record starts watching the cluster until ctx ends; it returns once the watches are synced.
func Record(ctx context.Context, client kubernetes.Interface) (*Recorder, error) {
	r := &Recorder{seen: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(client, 0)
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{factory.Core().V1().Pods().Informer(), handle(r.pod, r.podGone)},
		{factory.Core().V1().PersistentVolumeClaims().Informer(), handle(r.claim, nil)},
		{factory.Storage().V1().VolumeAttachments().Informer(), handle(r.va, r.vaGone)},
		{factory.Core().V1().Nodes().Informer(), handle(r.node, r.nodeGone)},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("cluster: recorder handler: %w", err)
		}
	}
	if err := testinformers.Start(ctx, factory); err != nil {
		return nil, fmt.Errorf("cluster: recorder: %w", err)
	}
	return r, nil
}

// handle calls seen on adds and updates, gone on deletes (with tombstones unwrapped).
func handle(seen func(any), gone func(any)) cache.ResourceEventHandlerFuncs {
	h := cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}
	if gone != nil {
		h.DeleteFunc = func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			gone(obj)
		}
	}
	return h
}

func (r *Recorder) add(e Event) {
	key := e.What + "|" + string(e.UID) + "|" + e.Name + "|" + e.Detail
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] {
		return
	}
	r.seen[key] = true
	e.At = time.Now()
	r.events = append(r.events, e)
}

func (r *Recorder) pod(obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	e := Event{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Node: p.Spec.NodeName}
	r.add(with(e, PodCreated))
	if p.Spec.NodeName != "" {
		r.add(with(e, PodScheduled))
	}
	if p.Status.Phase == v1.PodRunning {
		r.add(with(e, PodRunning))
	}
	if p.DeletionTimestamp != nil {
		r.add(with(e, PodTerminating))
	}
}

func (r *Recorder) podGone(obj any) {
	if p, ok := obj.(*v1.Pod); ok {
		r.add(Event{What: PodDeleted, Namespace: p.Namespace, Name: p.Name, UID: p.UID, Node: p.Spec.NodeName})
	}
}

func (r *Recorder) claim(obj any) {
	c, ok := obj.(*v1.PersistentVolumeClaim)
	if ok && c.Status.Phase == v1.ClaimBound {
		r.add(Event{What: ClaimBound, Namespace: c.Namespace, Name: c.Name, UID: c.UID, Detail: c.Spec.VolumeName})
	}
}

func (r *Recorder) va(obj any) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return
	}
	e := Event{Name: va.Name, UID: va.UID, Node: va.Spec.NodeName, Detail: pvOf(va)}
	r.add(with(e, VACreated))
	if va.Status.Attached {
		r.add(with(e, VAAttached))
	}
	if va.DeletionTimestamp != nil {
		r.add(with(e, VADeleting))
	}
}

func (r *Recorder) vaGone(obj any) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok {
		r.add(Event{What: VADeleted, Name: va.Name, UID: va.UID, Node: va.Spec.NodeName, Detail: pvOf(va)})
	}
}

func (r *Recorder) node(obj any) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	e := Event{Name: n.Name, UID: n.UID, Node: n.Name}
	for _, c := range n.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		// One event per transition: the transition time tells them apart.
		e.Detail = c.LastTransitionTime.UTC().Format(time.RFC3339)
		if c.Status == v1.ConditionTrue {
			r.add(with(e, NodeReadyAgain))
		} else {
			r.add(with(e, NodeNotReady))
		}
	}
	for _, t := range n.Spec.Taints {
		e.Detail = t.Key + ":" + string(t.Effect)
		r.add(with(e, NodeTainted))
	}
}

func (r *Recorder) nodeGone(obj any) {
	if n, ok := obj.(*v1.Node); ok {
		r.add(Event{What: NodeDeleted, Name: n.Name, UID: n.UID, Node: n.Name})
	}
}

func with(e Event, what string) Event { e.What = what; return e }

func pvOf(va *storagev1.VolumeAttachment) string {
	if va.Spec.Source.PersistentVolumeName != nil {
		return *va.Spec.Source.PersistentVolumeName
	}
	return ""
}

// Events returns the events recorded so far that match (all when match is nil), in order.
func (r *Recorder) Events(match func(Event) bool) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if match == nil || match(e) {
			out = append(out, e)
		}
	}
	return out
}

// First returns the first recorded event that matches.
func (r *Recorder) First(match func(Event) bool) (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if match(e) {
			return e, true
		}
	}
	return Event{}, false
}

// Wait waits until an event that matches is recorded (or was already) and returns the first.
func (r *Recorder) Wait(ctx context.Context, what string, timeout time.Duration, match func(Event) bool) (Event, error) {
	var found Event
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		e, ok := r.First(match)
		found = e
		return ok, nil
	})
	if err != nil {
		return Event{}, fmt.Errorf("%s: not seen within %s: %w", what, timeout, err)
	}
	return found, nil
}

// Is returns a matcher of events of kind what about namespace/name (namespace empty for
// cluster-scoped objects).
func Is(what, namespace, name string) func(Event) bool {
	return func(e Event) bool { return e.What == what && e.Namespace == namespace && e.Name == name }
}
