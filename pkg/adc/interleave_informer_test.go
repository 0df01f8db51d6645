package adc

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// informerModel is one informer as client-go runs it, cut into the steps the schedule
// orders: the API server's watch events wait in events until the reflector applies the next
// one to the store (store update), which queues a notification; the notification waits in
// notes until the handler is called with it (handler delivery, asynchronous in client-go).
// A watch can break (the events in flight are never delivered) and is then repaired by a
// relist, which replaces the store and notifies deletions first, then additions and changes,
// as client-go's ReplacedAll processing does. Unchanged objects are not notified on a relist
// (client-go delivers those sync notifications only to handlers with a resync period).
type informerModel struct {
	res     string
	store   cache.Indexer
	handler cache.ResourceEventHandler
	events  []watchEvent
	notes   []notification
	broken  bool
	// setRV records the store's last synced resourceVersion (the VolumeAttachment store);
	// nil for stores whose resourceVersion adc does not read.
	setRV func(string)
}

type watchEvent struct {
	typ watch.EventType
	obj runtime.Object
}

type notification struct {
	typ      watch.EventType
	old, cur interface{}
}

func (e watchEvent) label() string { return string(e.typ) + " " + objLabel(e.obj) }

func (n notification) label() string { return string(n.typ) + " " + objLabel(n.cur) }

// objLabel names an object with its resourceVersion (and UID for VolumeAttachments).
func objLabel(obj interface{}) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return "tombstone(" + objLabel(t.Obj) + ")"
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	s := m.GetName() + "@" + m.GetResourceVersion()
	if m.GetNamespace() != "" {
		s = m.GetNamespace() + "/" + s
	}
	if _, isVA := cached.VAOf(obj); isVA {
		s += "[" + string(m.GetUID()) + "]"
	}
	return s
}

// emit is the API server sending a watch event; a broken watch sends nothing.
func (i *informerModel) emit(typ watch.EventType, obj runtime.Object) {
	if !i.broken {
		i.events = append(i.events, watchEvent{typ: typ, obj: obj})
	}
}

// applyNext is the reflector applying the next watch event to the store.
func (i *informerModel) applyNext() {
	e := i.events[0]
	i.events = i.events[1:]
	switch e.typ {
	case watch.Added, watch.Modified:
		if old, exists, _ := i.store.Get(e.obj); exists {
			must(i.store.Update(e.obj))
			i.notes = append(i.notes, notification{typ: watch.Modified, old: old, cur: e.obj})
		} else {
			must(i.store.Add(e.obj))
			i.notes = append(i.notes, notification{typ: watch.Added, cur: e.obj})
		}
	case watch.Deleted:
		must(i.store.Delete(e.obj))
		i.notes = append(i.notes, notification{typ: watch.Deleted, cur: e.obj})
	}
	if i.setRV != nil {
		m, _ := meta.Accessor(e.obj)
		i.setRV(m.GetResourceVersion())
	}
}

// deliverNext calls the handler with the next notification and returns it.
func (i *informerModel) deliverNext() notification {
	n := i.notes[0]
	i.notes = i.notes[1:]
	switch n.typ {
	case watch.Added:
		i.handler.OnAdd(n.cur, false)
	case watch.Modified:
		i.handler.OnUpdate(n.old, n.cur)
	case watch.Deleted:
		i.handler.OnDelete(n.cur)
	}
	return n
}

// breakWatch loses the events in flight; nothing more arrives until a relist.
func (i *informerModel) breakWatch() {
	i.events = nil
	i.broken = true
}

// relist replaces the store with the API server's list at resourceVersion rv.
func (i *informerModel) relist(list []runtime.Object, rv string) {
	inList := map[string]bool{}
	items := make([]interface{}, len(list))
	var changes []notification
	for k, obj := range list {
		items[k] = obj
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		inList[key] = true
		old, exists, _ := i.store.GetByKey(key)
		switch {
		case !exists:
			changes = append(changes, notification{typ: watch.Added, cur: obj})
		case rvOf(old) != rvOf(obj):
			changes = append(changes, notification{typ: watch.Modified, old: old, cur: obj})
		}
	}
	var deletions []notification
	keys := i.store.ListKeys()
	sort.Strings(keys)
	for _, key := range keys {
		if !inList[key] {
			old, _, _ := i.store.GetByKey(key)
			deletions = append(deletions, notification{typ: watch.Deleted, cur: cache.DeletedFinalStateUnknown{Key: key, Obj: old}})
		}
	}
	must(i.store.Replace(items, rv))
	if i.setRV != nil {
		i.setRV(rv)
	}
	i.notes = append(append(i.notes, deletions...), changes...)
	i.events = nil
	i.broken = false
}

func rvOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// dump is the informer's state as canonical text: store, events in flight, notifications.
func (i *informerModel) dump() string {
	var b strings.Builder
	keys := i.store.ListKeys()
	sort.Strings(keys)
	fmt.Fprintf(&b, "%s broken=%t store:", i.res, i.broken)
	for _, k := range keys {
		obj, _, _ := i.store.GetByKey(k)
		b.WriteString(" " + objLabel(obj))
	}
	b.WriteString(" events:")
	for _, e := range i.events {
		b.WriteString(" " + e.label())
	}
	b.WriteString(" notes:")
	for _, n := range i.notes {
		b.WriteString(" " + n.label())
	}
	return b.String()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// vaStore is the controller's VolumeAttachment store in the explorer. It replaces c.vas so
// that the explorer sets the store's resourceVersion (LastStoreSyncResourceVersion) as
// client-go does when it applies an event or a relist, lists in a fixed order (every
// schedule replays the same), and makes a worker's read of a node's VolumeAttachments a
// point where the worker can be preempted: right after the read, before the worker goes on
// (actual.Read then takes memory's lock and reads the expectations).
type vaStore struct {
	cache.Indexer
	h  *harness
	rv string
}

func newVAStore(h *harness) *vaStore {
	return &vaStore{Indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byNodeIndex: vaNodeName}), h: h}
}

func (s *vaStore) LastStoreSyncResourceVersion() string { return s.rv }

func (s *vaStore) Bookmark(rv string) { s.rv = rv }

func (s *vaStore) Replace(list []interface{}, rv string) error {
	s.rv = rv
	return s.Indexer.Replace(list, rv)
}

func (s *vaStore) ByIndex(index, value string) ([]interface{}, error) {
	if index == byNodeIndex {
		if objs, ok := s.h.staleRead(value); ok {
			return objs, nil
		}
	}
	objs, err := s.Indexer.ByIndex(index, value)
	sortByKey(objs)
	if index == byNodeIndex {
		s.h.storeRead(value, objs)
	}
	return objs, err
}

// sortedIndexer lists a store's index in key order, so that a worker decides a node's pods in
// the same order in every replay.
type sortedIndexer struct{ cache.Indexer }

func (s sortedIndexer) ByIndex(index, value string) ([]interface{}, error) {
	objs, err := s.Indexer.ByIndex(index, value)
	sortByKey(objs)
	return objs, err
}

func sortByKey(objs []interface{}) {
	sort.Slice(objs, func(a, b int) bool {
		ka, _ := cache.MetaNamespaceKeyFunc(objs[a])
		kb, _ := cache.MetaNamespaceKeyFunc(objs[b])
		return ka < kb
	})
}
