package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
)

// detachOrder watches one node and the VolumeAttachments on it with the admin client (never
// through a fault proxy) and checks every VolumeAttachment deletion against the node's state
// just before it, in resourceVersion (etcd revision) order: the kubelet must not report the
// volume in use, and node status must no longer list it.
type detachOrder struct {
	node   string
	unique map[string]string // VolumeAttachment name -> unique volume name

	mu     sync.Mutex
	events []orderEvent
	errs   []error
}

type orderEvent struct {
	rv   string
	node *v1.Node
	va   *storagev1.VolumeAttachment
	// gone: the VolumeAttachment was deleted (DELETED, or its deletion timestamp appeared).
	gone bool
}

// recordDetachOrder starts recording until the test ends. unique maps the VolumeAttachment
// names the test checks to their volumes' unique names.
func (e *testEnv) recordDetachOrder(node string, unique map[string]string) *detachOrder {
	e.t.Helper()
	d := &detachOrder{node: node, unique: unique}
	nodes, err := e.client.CoreV1().Nodes().Watch(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()})
	if err != nil {
		e.t.Fatalf("watching node %s: %v", node, err)
	}
	vas, err := e.client.StorageV1().VolumeAttachments().Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		nodes.Stop()
		e.t.Fatalf("watching VolumeAttachments: %v", err)
	}
	e.t.Cleanup(nodes.Stop)
	e.t.Cleanup(vas.Stop)
	go d.consume(e.ctx, nodes)
	go d.consume(e.ctx, vas)
	return d
}

func (d *detachOrder) consume(ctx context.Context, w watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			d.add(ev)
		}
	}
}

func (d *detachOrder) add(ev watch.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch obj := ev.Object.(type) {
	case *v1.Node:
		d.events = append(d.events, orderEvent{rv: obj.ResourceVersion, node: obj})
	case *storagev1.VolumeAttachment:
		if _, checked := d.unique[obj.Name]; !checked {
			return
		}
		gone := ev.Type == watch.Deleted || obj.DeletionTimestamp != nil
		d.events = append(d.events, orderEvent{rv: obj.ResourceVersion, va: obj, gone: gone})
	case *metav1.Status:
		d.errs = append(d.errs, fmt.Errorf("watch error: %s", obj.Message))
	}
}

// check replays the recorded events in revision order and returns how many deletions it
// checked and every violation.
func (d *detachOrder) check() (int, []string) {
	d.mu.Lock()
	events := append([]orderEvent(nil), d.events...)
	errs := append([]error(nil), d.errs...)
	d.mu.Unlock()
	var bad []string
	for _, err := range errs {
		bad = append(bad, err.Error())
	}
	sort.SliceStable(events, func(i, j int) bool {
		c, err := resourceversion.CompareResourceVersion(events[i].rv, events[j].rv)
		return err == nil && c < 0
	})
	var node *v1.Node
	deleted := map[string]bool{}
	checked := 0
	for _, ev := range events {
		if ev.node != nil {
			node = ev.node
			continue
		}
		if !ev.gone || deleted[ev.va.Name+"/"+string(ev.va.UID)] {
			continue
		}
		deleted[ev.va.Name+"/"+string(ev.va.UID)] = true
		checked++
		if node == nil {
			continue
		}
		u := d.unique[ev.va.Name]
		for _, inUse := range node.Status.VolumesInUse {
			if string(inUse) == u {
				bad = append(bad, fmt.Sprintf("detach_while_in_use: VolumeAttachment %s deleted at rv %s while node %s (rv %s) reported %s in use", ev.va.Name, ev.rv, node.Name, node.ResourceVersion, u))
			}
		}
		for _, av := range node.Status.VolumesAttached {
			if string(av.Name) == u {
				bad = append(bad, fmt.Sprintf("detach_order: VolumeAttachment %s deleted at rv %s while node %s (rv %s) still listed %s", ev.va.Name, ev.rv, node.Name, node.ResourceVersion, u))
			}
		}
	}
	return checked, bad
}
