package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Invariant names, as they appear in violations and counts.
const (
	DetachWhileInUse = "detach_while_in_use"
	DetachOrder      = "detach_order"
	MultiAttach      = "multi_attach"
	Convergence      = "convergence"
)

// outOfServiceTaint is the taint that allows a force detach at once.
const outOfServiceTaint = "node.kubernetes.io/out-of-service"

// Kind is the kind of object an Event carries; only the kinds the invariants need.
type Kind int

// The kinds the checker follows.
const (
	KindNode Kind = iota
	KindVolumeAttachment
	KindPersistentVolume
	KindPod
	KindClaim
)

// Event is one change of one object at one etcd revision, which is how the checker sees the
// cluster: in the order etcd applied the changes.
type Event struct {
	// Rev is the etcd revision of the change.
	Rev int64
	// Kind is what Object is.
	Kind Kind
	// Name is the object's name, namespace/name for namespaced kinds.
	Name string
	// Deleted says the object was removed at Rev; Object is then its last state.
	Deleted bool
	// Object is the object after the change (before it, on a delete).
	Object runtime.Object
	// Seen is the wall time the change was observed, the deletion time of an object deleted
	// without a deletionTimestamp.
	Seen time.Time
}

// Violation is one breach of an invariant, with enough context to find it in the logs.
type Violation struct {
	// Invariant is one of DetachWhileInUse, DetachOrder, MultiAttach, Convergence.
	Invariant string
	// Rev is the etcd revision of the offending change (0 for convergence).
	Rev int64
	// Message names the objects, revisions and the node state.
	Message string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// Checker applies Events in revision order, keeps the latest state of every followed object
// and checks the invariants at the revisions where they can break. It is safe for one writer
// (Apply) and concurrent readers.
type Checker struct {
	// MaxWaitForUnmount is adc's --max-wait-for-unmount: after a node has been not Ready for
	// that long, its in-use volumes may be force-detached.
	MaxWaitForUnmount time.Duration
	// Slack absorbs the one-second resolution of the timestamps compared with it
	// (deletionTimestamp, lastTransitionTime).
	Slack time.Duration

	mu         sync.Mutex
	lastRev    int64
	nodes      map[string]*v1.Node
	nodeRevs   map[string]int64
	pvs        map[string]*v1.PersistentVolume
	vas        map[string]*storagev1.VolumeAttachment
	pods       map[string]*v1.Pod
	claims     map[string]*v1.PersistentVolumeClaim
	checked    map[string]int
	violations []Violation
}

// NewChecker returns a Checker for a controller running with maxWaitForUnmount.
func NewChecker(maxWaitForUnmount time.Duration) *Checker {
	return &Checker{
		MaxWaitForUnmount: maxWaitForUnmount,
		Slack:             time.Second,
		nodes:             map[string]*v1.Node{},
		nodeRevs:          map[string]int64{},
		pvs:               map[string]*v1.PersistentVolume{},
		vas:               map[string]*storagev1.VolumeAttachment{},
		pods:              map[string]*v1.Pod{},
		claims:            map[string]*v1.PersistentVolumeClaim{},
		checked:           map[string]int{},
	}
}

// Apply takes the next change. Changes must come in revision order.
func (c *Checker) Apply(ev Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Rev < c.lastRev {
		return fmt.Errorf("event at rev %d after rev %d: events must come in revision order", ev.Rev, c.lastRev)
	}
	c.lastRev = ev.Rev
	switch ev.Kind {
	case KindNode:
		node, ok := ev.Object.(*v1.Node)
		if !ok {
			return fmt.Errorf("rev %d: node %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		if ev.Deleted {
			delete(c.nodes, node.Name)
		} else {
			c.nodes[node.Name] = node
		}
		c.nodeRevs[node.Name] = ev.Rev
	case KindPersistentVolume:
		pv, ok := ev.Object.(*v1.PersistentVolume)
		if !ok {
			return fmt.Errorf("rev %d: PersistentVolume %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		setOrDelete(c.pvs, pv.Name, pv, ev.Deleted)
	case KindPod:
		pod, ok := ev.Object.(*v1.Pod)
		if !ok {
			return fmt.Errorf("rev %d: pod %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		setOrDelete(c.pods, pod.Namespace+"/"+pod.Name, pod, ev.Deleted)
	case KindClaim:
		claim, ok := ev.Object.(*v1.PersistentVolumeClaim)
		if !ok {
			return fmt.Errorf("rev %d: claim %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		setOrDelete(c.claims, claim.Namespace+"/"+claim.Name, claim, ev.Deleted)
	case KindVolumeAttachment:
		va, ok := ev.Object.(*storagev1.VolumeAttachment)
		if !ok {
			return fmt.Errorf("rev %d: VolumeAttachment %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		c.applyVA(ev, va)
	}
	return nil
}

func setOrDelete[T any](m map[string]T, key string, obj T, deleted bool) {
	if deleted {
		delete(m, key)
	} else {
		m[key] = obj
	}
}

func (c *Checker) applyVA(ev Event, va *storagev1.VolumeAttachment) {
	prev, known := c.vas[va.Name]
	if ev.Deleted {
		if !known {
			prev = va
		}
		if prev.DeletionTimestamp == nil {
			c.checkDetach(prev, ev.Rev, ev.Seen)
		}
		delete(c.vas, va.Name)
		return
	}
	if !known {
		c.checkMultiAttach(va, ev.Rev)
	}
	if va.DeletionTimestamp != nil && (!known || prev.DeletionTimestamp == nil) {
		c.checkDetach(va, ev.Rev, va.DeletionTimestamp.Time)
	}
	c.vas[va.Name] = va
}

// checkMultiAttach runs when va is created: a ReadWriteOnce volume must have no
// VolumeAttachment on another node, whatever its state.
func (c *Checker) checkMultiAttach(va *storagev1.VolumeAttachment, rev int64) {
	pvName := va.Spec.Source.PersistentVolumeName
	if pvName == nil {
		return
	}
	pv := c.pvs[*pvName]
	if pv == nil || !readWriteOnce(pv) {
		return
	}
	c.checked[MultiAttach]++
	for _, other := range c.sortedVAs() {
		if other.Name == va.Name || other.Spec.NodeName == va.Spec.NodeName ||
			other.Spec.Source.PersistentVolumeName == nil || *other.Spec.Source.PersistentVolumeName != *pvName {
			continue
		}
		c.violate(MultiAttach, rev, fmt.Sprintf("VA %s (%s on %s) created at rv %d while VA %s (on %s, attached=%t, deleting=%t) exists; ReadWriteOnce",
			va.Name, *pvName, va.Spec.NodeName, rev, other.Name, other.Spec.NodeName, other.Status.Attached, other.DeletionTimestamp != nil))
	}
}

// checkDetach runs at the revision where va is deleted (at time at): its node, if it exists,
// must no longer list the volume, and must not report it in use unless a force detach is
// allowed.
func (c *Checker) checkDetach(va *storagev1.VolumeAttachment, rev int64, at time.Time) {
	c.checked[DetachOrder]++
	c.checked[DetachWhileInUse]++
	node := c.nodes[va.Spec.NodeName]
	if node == nil {
		return // the node is gone: detaching is what must happen
	}
	pvName, unique := c.volumeOf(va)
	listed := slices.ContainsFunc(node.Status.VolumesAttached, func(av v1.AttachedVolume) bool { return string(av.Name) == unique })
	inUse := slices.ContainsFunc(node.Status.VolumesInUse, func(n v1.UniqueVolumeName) bool { return string(n) == unique })
	ready, notReadyFor := readiness(node, at)
	oos := outOfService(node)
	state := fmt.Sprintf("VA %s (%s on %s) deleted at rv %d; node state at rv %d: listed=%t inUse=%t ready=%s notReadyFor=%s outOfService=%t; pods of the claim on the node: %d",
		va.Name, pvName, va.Spec.NodeName, rev, c.nodeRevs[node.Name], listed, inUse, ready, notReadyFor.Round(time.Second), oos, c.podsUsing(pvName, node.Name))
	if listed {
		c.violate(DetachOrder, rev, state)
	}
	if inUse && !oos && notReadyFor+c.Slack < c.MaxWaitForUnmount {
		c.violate(DetachWhileInUse, rev, state)
	}
}

func (c *Checker) violate(invariant string, rev int64, msg string) {
	c.violations = append(c.violations, Violation{Invariant: invariant, Rev: rev, Message: msg})
}

// volumeOf returns the PersistentVolume name and the unique volume name of va, as far as
// they are known.
func (c *Checker) volumeOf(va *storagev1.VolumeAttachment) (pvName, unique string) {
	if va.Spec.Source.PersistentVolumeName == nil {
		return "<inline>", "<inline>"
	}
	pvName = *va.Spec.Source.PersistentVolumeName
	pv := c.pvs[pvName]
	if pv == nil || pv.Spec.CSI == nil {
		return pvName, "<unknown PersistentVolume " + pvName + ">"
	}
	return pvName, uniqueName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
}

// podsUsing counts the pods on node whose claim is bound to the PersistentVolume pvName.
func (c *Checker) podsUsing(pvName, node string) int {
	n := 0
	for _, pod := range c.pods {
		if pod.Spec.NodeName == node && c.podUses(pod, pvName) {
			n++
		}
	}
	return n
}

func (c *Checker) podUses(pod *v1.Pod, pvName string) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		if claim := c.claims[pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName]; claim != nil && claim.Spec.VolumeName == pvName {
			return true
		}
	}
	return false
}

func (c *Checker) sortedVAs() []*storagev1.VolumeAttachment {
	out := make([]*storagev1.VolumeAttachment, 0, len(c.vas))
	for _, va := range c.vas {
		out = append(out, va)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Convergence checks the end state, the latest state applied: every volume of every pod on
// an existing node has an attached VolumeAttachment on that node and is listed in the node's
// status, and every VolumeAttachment is used by a pod on its (existing) node. It returns the
// problems without recording them, so a caller can poll until it is empty, and
// RecordConvergence the last answer.
func (c *Checker) Convergence() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, Violation{Invariant: Convergence, Message: fmt.Sprintf(format, args...)})
	}
	keys := make([]string, 0, len(c.pods))
	for k := range c.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		pod := c.pods[key]
		node := c.nodes[pod.Spec.NodeName]
		if node == nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil {
				continue
			}
			claim := c.claims[pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName]
			if claim == nil || c.pvs[claim.Spec.VolumeName] == nil || c.pvs[claim.Spec.VolumeName].Spec.CSI == nil {
				continue
			}
			csi := c.pvs[claim.Spec.VolumeName].Spec.CSI
			unique := uniqueName(csi.Driver, csi.VolumeHandle)
			name := VAName(csi.VolumeHandle, csi.Driver, node.Name)
			va := c.vas[name]
			listed := slices.ContainsFunc(node.Status.VolumesAttached, func(av v1.AttachedVolume) bool { return string(av.Name) == unique })
			switch {
			case va == nil:
				add("pod %s on %s: no VA %s for %s", key, node.Name, name, claim.Spec.VolumeName)
			case va.DeletionTimestamp != nil || !va.Status.Attached:
				add("pod %s on %s: VA %s for %s attached=%t deleting=%t", key, node.Name, name, claim.Spec.VolumeName, va.Status.Attached, va.DeletionTimestamp != nil)
			case !listed:
				add("pod %s on %s: %s attached but not listed in node status", key, node.Name, claim.Spec.VolumeName)
			}
		}
	}
	for _, va := range c.sortedVAs() {
		pvName, _ := c.volumeOf(va)
		switch {
		case c.nodes[va.Spec.NodeName] == nil:
			add("VA %s (%s) left on deleted node %s", va.Name, pvName, va.Spec.NodeName)
		case c.podsUsing(pvName, va.Spec.NodeName) == 0:
			add("VA %s (%s on %s) left with no pod using it on the node (deleting=%t)", va.Name, pvName, va.Spec.NodeName, va.DeletionTimestamp != nil)
		}
	}
	return out
}

// RecordConvergence records the outcome of the final convergence check: the count of pods
// and VolumeAttachments it covered and its problems as violations.
func (c *Checker) RecordConvergence(checked int, problems []Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked[Convergence] += checked
	c.violations = append(c.violations, problems...)
}

// Size returns how many pods and VolumeAttachments the latest state has.
func (c *Checker) Size() (pods, vas int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods), len(c.vas)
}

// Counts returns how many times each invariant was checked.
func (c *Checker) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.checked))
	for k, v := range c.checked {
		out[k] = v
	}
	return out
}

// Violations returns the violations so far, in revision order.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// LastRev returns the revision of the last change applied.
func (c *Checker) LastRev() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastRev
}

// Summary is a one-line count of checks and violations per invariant, for the test log.
func Summary(counts map[string]int, violations []Violation) string {
	byInv := map[string]int{}
	for _, v := range violations {
		byInv[v.Invariant]++
	}
	var parts []string
	for _, inv := range []string{DetachWhileInUse, DetachOrder, MultiAttach, Convergence} {
		parts = append(parts, fmt.Sprintf("%s: %d checked, %d violated", inv, counts[inv], byInv[inv]))
	}
	return strings.Join(parts, "; ")
}

func readWriteOnce(pv *v1.PersistentVolume) bool {
	for _, m := range pv.Spec.AccessModes {
		if m == v1.ReadWriteMany || m == v1.ReadOnlyMany {
			return false
		}
	}
	return true
}

// readiness returns the node's Ready status and how long it had not been Ready at time at.
func readiness(node *v1.Node, at time.Time) (v1.ConditionStatus, time.Duration) {
	for _, cond := range node.Status.Conditions {
		if cond.Type != v1.NodeReady {
			continue
		}
		if cond.Status == v1.ConditionTrue {
			return cond.Status, 0
		}
		return cond.Status, at.Sub(cond.LastTransitionTime.Time)
	}
	return "missing", 0
}

func outOfService(node *v1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool {
		return t.Key == outOfServiceTaint && t.Effect == v1.TaintEffectNoExecute
	})
}

func uniqueName(driver, handle string) string { return "kubernetes.io/csi/" + driver + "^" + handle }

// VAName is the VolumeAttachment name the kubelet expects for a CSI volume on a node.
func VAName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}
