package adc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// apiTruth is the API server of the interleaving explorer: the objects as they are, their
// resourceVersions and UIDs. Every change is sent to the matching informer model as a watch
// event; what the controller sees of it, and when, is up to the schedule.
//
// resourceVersions count per resource, not across resources as etcd does: adc compares a
// resourceVersion only with others of the same resource, so this loses nothing and lets
// schedules that differ only in the order of unrelated writes meet in one state.
type apiTruth struct {
	h     *harness
	vas   map[string]*storagev1.VolumeAttachment
	nodes map[string]*v1.Node
	pods  map[string]*v1.Pod
	rv    map[string]int
	// incarnation numbers the objects created under one VolumeAttachment name, for UIDs that
	// are the same in every schedule.
	incarnation map[string]int
}

// The resources the explorer models, as informer names.
const (
	resPods  = "pods"
	resNodes = "nodes"
	resVAs   = "volumeattachments"
)

// attacherFinalizer is what the external-attacher puts on a VolumeAttachment it attaches; a
// delete then only marks the object until the attacher has detached.
const attacherFinalizer = "external-attacher/d-csi"

func newAPITruth(h *harness) *apiTruth {
	return &apiTruth{h: h, vas: map[string]*storagev1.VolumeAttachment{}, nodes: map[string]*v1.Node{}, pods: map[string]*v1.Pod{},
		rv: map[string]int{resPods: 100, resNodes: 100, resVAs: 100}, incarnation: map[string]int{}}
}

func (a *apiTruth) nextRV(res string) string {
	a.rv[res]++
	return strconv.Itoa(a.rv[res])
}

func (a *apiTruth) emit(res string, typ watch.EventType, obj runtime.Object) {
	a.h.informers[res].emit(typ, obj.DeepCopyObject())
}

// createVA stores a new VolumeAttachment; AlreadyExists when the name is taken.
func (a *apiTruth) createVA(va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	if old := a.vas[va.Name]; old != nil {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "storage.k8s.io", Resource: resVAs}, va.Name)
	}
	va = va.DeepCopy()
	a.incarnation[va.Name]++
	va.UID = types.UID(fmt.Sprintf("%s#%d", va.Name, a.incarnation[va.Name]))
	va.ResourceVersion = a.nextRV(resVAs)
	va.CreationTimestamp = metav1.NewTime(a.h.clk.Now())
	a.vas[va.Name] = va
	a.emit(resVAs, watch.Added, va)
	return va.DeepCopy(), nil
}

// deleteVA deletes a VolumeAttachment (with a UID precondition when uid is set): it is gone
// at once without a finalizer, marked deleting with one.
func (a *apiTruth) deleteVA(name string, uid types.UID) error {
	va := a.vas[name]
	gr := schema.GroupResource{Group: "storage.k8s.io", Resource: resVAs}
	if va == nil {
		return apierrors.NewNotFound(gr, name)
	}
	if uid != "" && va.UID != uid {
		return apierrors.NewConflict(gr, name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, va.UID))
	}
	if len(va.Finalizers) == 0 {
		delete(a.vas, name)
		a.emit(resVAs, watch.Deleted, a.deleted(resVAs, va).(*storagev1.VolumeAttachment))
		return nil
	}
	if va.DeletionTimestamp == nil {
		va.DeletionTimestamp = &metav1.Time{Time: a.h.clk.Now()}
		va.ResourceVersion = a.nextRV(resVAs)
		a.emit(resVAs, watch.Modified, va)
	}
	return nil
}

// updateVA applies change to a stored VolumeAttachment (an external actor's write).
func (a *apiTruth) updateVA(name string, change func(*storagev1.VolumeAttachment)) {
	va := a.vas[name]
	change(va)
	va.ResourceVersion = a.nextRV(resVAs)
	a.emit(resVAs, watch.Modified, va)
}

// removeVA deletes a VolumeAttachment for good (the attacher removed its finalizer).
func (a *apiTruth) removeVA(name string) {
	va := a.vas[name]
	delete(a.vas, name)
	a.emit(resVAs, watch.Deleted, a.deleted(resVAs, va).(*storagev1.VolumeAttachment))
}

// updateNode applies change to a Node; nil when there is no such node.
func (a *apiTruth) updateNode(name string, change func(*v1.Node)) *v1.Node {
	n := a.nodes[name]
	if n == nil {
		return nil
	}
	change(n)
	n.ResourceVersion = a.nextRV(resNodes)
	a.emit(resNodes, watch.Modified, n)
	return n.DeepCopy()
}

func (a *apiTruth) addPod(p *v1.Pod) {
	p = p.DeepCopy()
	p.ResourceVersion = a.nextRV(resPods)
	a.pods[p.Namespace+"/"+p.Name] = p
	a.emit(resPods, watch.Added, p)
}

func (a *apiTruth) deletePod(key string) {
	p := a.pods[key]
	delete(a.pods, key)
	a.emit(resPods, watch.Deleted, a.deleted(resPods, p).(*v1.Pod))
}

// list returns a resource's objects, sorted by key, as a relist would.
func (a *apiTruth) list(res string) []runtime.Object {
	var keys []string
	objs := map[string]runtime.Object{}
	switch res {
	case resVAs:
		for k, o := range a.vas {
			keys, objs[k] = append(keys, k), o.DeepCopy()
		}
	case resNodes:
		for k, o := range a.nodes {
			keys, objs[k] = append(keys, k), o.DeepCopy()
		}
	case resPods:
		for k, o := range a.pods {
			keys, objs[k] = append(keys, k), o.DeepCopy()
		}
	}
	sort.Strings(keys)
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = objs[k]
	}
	return out
}

// dump is the truth as canonical text, for state keys and traces.
func (a *apiTruth) dump() string {
	var lines []string
	for _, o := range a.list(resVAs) {
		va := o.(*storagev1.VolumeAttachment)
		lines = append(lines, fmt.Sprintf("va %s uid=%s rv=%s node=%s attached=%t deleting=%t fin=%d",
			va.Name, va.UID, va.ResourceVersion, va.Spec.NodeName, va.Status.Attached, va.DeletionTimestamp != nil, len(va.Finalizers)))
	}
	for _, o := range a.list(resNodes) {
		n := o.(*v1.Node)
		lines = append(lines, fmt.Sprintf("node %s rv=%s attached=%v inUse=%v", n.Name, n.ResourceVersion, attachedNames(n.Status.VolumesAttached), n.Status.VolumesInUse))
	}
	for _, o := range a.list(resPods) {
		p := o.(*v1.Pod)
		lines = append(lines, fmt.Sprintf("pod %s/%s rv=%s node=%s", p.Namespace, p.Name, p.ResourceVersion, p.Spec.NodeName))
	}
	return strings.Join(lines, "\n")
}

// deleted is the object a DELETED watch event carries: the last state, at the resourceVersion
// of the deletion itself (as the API server sends it), not of the object's last change. A
// store that applies the event is then synced past the deletion.
func (a *apiTruth) deleted(res string, obj runtime.Object) runtime.Object {
	cp := obj.DeepCopyObject()
	m, _ := meta.Accessor(cp)
	m.SetResourceVersion(a.nextRV(res))
	return cp
}
