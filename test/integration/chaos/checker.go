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
	"k8s.io/klog/v2"

	csitrans "k8s.io/csi-translation-lib"
)

// Invariant names, as they appear in violations and counts.
const (
	DetachWhileInUse = "detach_while_in_use"
	DetachOrder      = "detach_order"
	MultiAttach      = "multi_attach"
	Convergence      = "convergence"
)

// Coverage counters in Counts: the attachments of each kind the invariants met.
const (
	// CoveredInline counts VolumeAttachments with spec.source.inlineVolumeSpec.
	CoveredInline = "covered_inline"
	// CoveredPVLess counts VolumeAttachments created for a PersistentVolume that did not
	// exist (any more).
	CoveredPVLess = "covered_pv_less"
	// CoveredInTree counts in-tree attaches: a node newly listing a volume that is not CSI.
	CoveredInTree = "covered_in_tree"
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
	pvSeen     map[string]*v1.PersistentVolume // the last state of every PersistentVolume, deleted ones too
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
		pvSeen:            map[string]*v1.PersistentVolume{},
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
		c.applyNode(ev, node)
	case KindPersistentVolume:
		pv, ok := ev.Object.(*v1.PersistentVolume)
		if !ok {
			return fmt.Errorf("rev %d: PersistentVolume %s is a %T", ev.Rev, ev.Name, ev.Object)
		}
		setOrDelete(c.pvs, pv.Name, pv, ev.Deleted)
		c.pvSeen[pv.Name] = pv
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
		c.cover(va)
		c.checkMultiAttach(va, ev.Rev)
	}
	if va.DeletionTimestamp != nil && (!known || prev.DeletionTimestamp == nil) {
		c.checkDetach(va, ev.Rev, va.DeletionTimestamp.Time)
	}
	c.vas[va.Name] = va
}

// cover counts the inline and PV-less VolumeAttachments created, so a run shows that the
// invariants met them (checkDetach counts the PV-less ones it meets at their deletion).
func (c *Checker) cover(va *storagev1.VolumeAttachment) {
	switch src := va.Spec.Source; {
	case src.InlineVolumeSpec != nil:
		c.checked[CoveredInline]++
	case src.PersistentVolumeName != nil && c.pvs[*src.PersistentVolumeName] == nil:
		c.checked[CoveredPVLess]++
	}
}

// applyNode takes a node's new state (or its deletion) and checks what its change of
// status.volumesAttached means for in-tree attachments, which have no VolumeAttachment: a
// newly listed in-tree volume was attached (multi_attach), an unlisted one was detached
// (detach_while_in_use).
func (c *Checker) applyNode(ev Event, node *v1.Node) {
	prev := c.nodes[node.Name]
	if ev.Deleted {
		delete(c.nodes, node.Name)
		c.nodeRevs[node.Name] = ev.Rev
		return // the node is gone: detaching is what must happen
	}
	c.nodes[node.Name] = node
	c.nodeRevs[node.Name] = ev.Rev
	before := inTreeListed(prev)
	after := inTreeListed(node)
	for _, u := range after {
		if !slices.Contains(before, u) {
			c.checked[CoveredInTree]++
			c.checkInTreeAttach(node, u, ev.Rev)
		}
	}
	for _, u := range before {
		if !slices.Contains(after, u) {
			c.checkInTreeDetach(node, u, ev.Rev, ev.Seen)
		}
	}
}

// checkInTreeAttach runs when node newly lists the in-tree volume unique: a ReadWriteOnce
// volume must not be attached anywhere else, in-tree or through CSI.
func (c *Checker) checkInTreeAttach(node *v1.Node, unique string, rev int64) {
	ref := c.inTreeRef(unique)
	if !ref.rwo {
		return
	}
	c.checked[MultiAttach]++
	for _, other := range c.sortedNodes() {
		if other.Name == node.Name || !slices.Contains(inTreeListed(other), unique) {
			continue
		}
		c.violate(MultiAttach, rev, fmt.Sprintf("in-tree volume %s listed on %s at rv %d while node %s (state at rv %d) lists it; ReadWriteOnce",
			unique, node.Name, rev, other.Name, c.nodeRevs[other.Name]))
	}
	for _, va := range c.sortedVAs() {
		if va.Spec.NodeName == node.Name {
			continue
		}
		if o := c.vaRef(va); o.key == ref.key {
			c.violate(MultiAttach, rev, fmt.Sprintf("in-tree volume %s listed on %s at rv %d while VA %s (%s on %s, attached=%t, deleting=%t) exists; ReadWriteOnce",
				unique, node.Name, rev, va.Name, o.desc, va.Spec.NodeName, va.Status.Attached, va.DeletionTimestamp != nil))
		}
	}
}

// checkInTreeDetach runs when node stops listing the in-tree volume unique, which adc does
// after the in-tree Detach returned: the kubelet must not report it in use unless a force
// detach is allowed. (detach_order does not apply: the listing is the in-tree attachment's
// only record.)
func (c *Checker) checkInTreeDetach(node *v1.Node, unique string, rev int64, at time.Time) {
	c.checked[DetachWhileInUse]++
	inUse := slices.ContainsFunc(node.Status.VolumesInUse, func(n v1.UniqueVolumeName) bool { return string(n) == unique })
	ready, notReadyFor := readiness(node, at)
	oos := outOfService(node)
	if inUse && !oos && notReadyFor+c.Slack < c.MaxWaitForUnmount {
		c.violate(DetachWhileInUse, rev, fmt.Sprintf("in-tree volume %s unlisted (detached) from %s at rv %d; node state: inUse=true ready=%s notReadyFor=%s outOfService=false; pods using it on the node: %d",
			unique, node.Name, rev, ready, notReadyFor.Round(time.Second), c.podsUsing(c.inTreeRef(unique).key, node.Name)))
	}
}

// checkMultiAttach runs when va is created: a ReadWriteOnce volume must have no
// VolumeAttachment on another node, whatever its state, and no in-tree attachment on
// another node. The volume is identified however va names it: a PersistentVolume (also one
// deleted since), or an inline volume spec.
func (c *Checker) checkMultiAttach(va *storagev1.VolumeAttachment, rev int64) {
	ref := c.vaRef(va)
	if ref.key == "" || !ref.rwo {
		return
	}
	c.checked[MultiAttach]++
	for _, other := range c.sortedVAs() {
		if other.Name == va.Name || other.Spec.NodeName == va.Spec.NodeName || c.vaRef(other).key != ref.key {
			continue
		}
		c.violate(MultiAttach, rev, fmt.Sprintf("VA %s (%s on %s) created at rv %d while VA %s (on %s, attached=%t, deleting=%t) exists; ReadWriteOnce",
			va.Name, ref.desc, va.Spec.NodeName, rev, other.Name, other.Spec.NodeName, other.Status.Attached, other.DeletionTimestamp != nil))
	}
	for _, node := range c.sortedNodes() {
		if node.Name == va.Spec.NodeName {
			continue
		}
		for _, u := range inTreeListed(node) {
			if c.inTreeRef(u).key == ref.key {
				c.violate(MultiAttach, rev, fmt.Sprintf("VA %s (%s on %s) created at rv %d while node %s (state at rv %d) lists in-tree volume %s; ReadWriteOnce",
					va.Name, ref.desc, va.Spec.NodeName, rev, node.Name, c.nodeRevs[node.Name], u))
			}
		}
	}
}

// checkDetach runs at the revision where va is deleted (at time at): its node, if it exists,
// must no longer list the volume, and must not report it in use unless a force detach is
// allowed.
func (c *Checker) checkDetach(va *storagev1.VolumeAttachment, rev int64, at time.Time) {
	c.checked[DetachOrder]++
	c.checked[DetachWhileInUse]++
	if src := va.Spec.Source; src.PersistentVolumeName != nil && c.pvs[*src.PersistentVolumeName] == nil {
		c.checked[CoveredPVLess]++
	}
	node := c.nodes[va.Spec.NodeName]
	if node == nil {
		return // the node is gone: detaching is what must happen
	}
	ref := c.vaRef(va)
	unique := ref.unique
	if unique == "" {
		unique = "<unidentified volume>"
	}
	listed := slices.ContainsFunc(node.Status.VolumesAttached, func(av v1.AttachedVolume) bool { return string(av.Name) == unique })
	inUse := slices.ContainsFunc(node.Status.VolumesInUse, func(n v1.UniqueVolumeName) bool { return string(n) == unique })
	ready, notReadyFor := readiness(node, at)
	oos := outOfService(node)
	state := fmt.Sprintf("VA %s (%s on %s) deleted at rv %d; node state at rv %d: listed=%t inUse=%t ready=%s notReadyFor=%s outOfService=%t; pods of the claim on the node: %d",
		va.Name, ref.desc, va.Spec.NodeName, rev, c.nodeRevs[node.Name], listed, inUse, ready, notReadyFor.Round(time.Second), oos, c.podsUsing(ref.key, node.Name))
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

// volRef is what the checker knows of the volume of an attachment or of a pod's volume.
type volRef struct {
	// key identifies the volume across mechanisms and names: a gce-pd disk attached in-tree
	// and through pd.csi.storage.gke.io has one key. Empty when the volume is unknown.
	key string
	// unique is the name node status lists it under for this attachment.
	unique string
	// rwo: the volume may be attached to one node at a time.
	rwo bool
	// desc names it in messages: the PersistentVolume, or inline:<handle>.
	desc string
}

// vaRef identifies va's volume: from its PersistentVolume (the last state the checker saw,
// if it was deleted since) or from its inline volume spec.
func (c *Checker) vaRef(va *storagev1.VolumeAttachment) volRef {
	src := va.Spec.Source
	switch {
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		csi := src.InlineVolumeSpec.CSI
		return volRef{key: csiKey(va.Spec.Attacher, csi.VolumeHandle), unique: uniqueName(va.Spec.Attacher, csi.VolumeHandle),
			rwo: readWriteOnce(src.InlineVolumeSpec.AccessModes), desc: "inline:" + csi.VolumeHandle}
	case src.InlineVolumeSpec != nil:
		return volRef{desc: "<inline volume without a csi source>"}
	case src.PersistentVolumeName != nil:
		name := *src.PersistentVolumeName
		pv, gone := c.pvs[name], ""
		if pv == nil {
			pv, gone = c.pvSeen[name], " (deleted)"
		}
		ref := pvRef(pv)
		if ref.key == "" {
			return volRef{desc: "<PersistentVolume " + name + " never seen>"}
		}
		ref.desc = name + gone
		return ref
	}
	return volRef{desc: "<no source>"}
}

// pvRef identifies a PersistentVolume's volume as a CSI attachment of it is named (a CSI
// source, or the CSI translation of an in-tree one).
func pvRef(pv *v1.PersistentVolume) volRef {
	if pv == nil {
		return volRef{}
	}
	if pv.Spec.CSI == nil {
		translated, err := translator.TranslateInTreePVToCSI(klog.Background(), pv)
		if err != nil || translated.Spec.CSI == nil {
			return volRef{}
		}
		pv = translated
	}
	csi := pv.Spec.CSI
	return volRef{key: csiKey(csi.Driver, csi.VolumeHandle), unique: uniqueName(csi.Driver, csi.VolumeHandle),
		rwo: readWriteOnce(pv.Spec.AccessModes), desc: pv.Name}
}

// inTreeRef identifies an in-tree volume by its unique name; it is ReadWriteOnce unless a
// PersistentVolume or a pod's inline volume the checker knows says otherwise.
func (c *Checker) inTreeRef(unique string) volRef {
	ref := volRef{key: inTreeKey(unique), unique: unique, rwo: true, desc: unique}
	for _, pv := range c.pvSeen {
		if r := pvRef(pv); r.key == ref.key && !r.rwo {
			ref.rwo = false
		}
	}
	for _, pod := range c.pods {
		for _, pv := range c.podVolumes(pod) {
			if pv.key == ref.key && !pv.rwo {
				ref.rwo = false
			}
		}
	}
	return ref
}

// translator turns in-tree volumes into their CSI form, as kube-controller-manager and adc do.
var translator = csitrans.New()

// gceDriver is the CSI driver gce-pd volumes migrate to.
const gceDriver = "pd.csi.storage.gke.io"

// csiKey is the cross-mechanism key of a CSI volume: a gce-pd disk by its name, anything
// else by its unique name.
func csiKey(driver, handle string) string {
	if driver == gceDriver {
		if i := strings.LastIndex(handle, "/disks/"); i >= 0 {
			return "gce-pd:" + handle[i+len("/disks/"):]
		}
	}
	return uniqueName(driver, handle)
}

// inTreeKey is the cross-mechanism key of an in-tree unique name (kubernetes.io/gce-pd/<disk>).
func inTreeKey(unique string) string {
	if disk, ok := strings.CutPrefix(unique, "kubernetes.io/gce-pd/"); ok {
		return "gce-pd:" + disk
	}
	return unique
}

// inTreeListed returns the in-tree volumes node status lists as attached: every name that is
// not a CSI one.
func inTreeListed(node *v1.Node) []string {
	if node == nil {
		return nil
	}
	var out []string
	for _, av := range node.Status.VolumesAttached {
		if name := string(av.Name); !strings.HasPrefix(name, csiPrefix) {
			out = append(out, name)
		}
	}
	return out
}

const csiPrefix = "kubernetes.io/csi/"

// podVol is one attachable volume of a pod, as the checker identifies it.
type podVol struct {
	volRef
	// name is the pod's volume name.
	name string
	// csiDriver and csiHandle are how a CSI attachment names it (translated for in-tree
	// volumes); empty when it has no CSI form.
	csiDriver, csiHandle string
	// inTree is its in-tree unique name, empty for a CSI volume.
	inTree string
	// pvName is the PersistentVolume of a claim's volume.
	pvName string
}

// podVolumes returns the attachable volumes of pod that the checker can identify: claims
// bound to a PersistentVolume it knows (also one deleted since) and inline in-tree volumes
// with a CSI translation. CSI ephemeral volumes are never attached and are left out.
func (c *Checker) podVolumes(pod *v1.Pod) []podVol {
	var out []podVol
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var pv *v1.PersistentVolume
		var inline bool
		switch {
		case vol.PersistentVolumeClaim != nil:
			claim := c.claims[pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName]
			if claim == nil || claim.Spec.VolumeName == "" {
				continue
			}
			if pv = c.pvs[claim.Spec.VolumeName]; pv == nil {
				pv = c.pvSeen[claim.Spec.VolumeName]
			}
			if pv == nil {
				continue
			}
		case translator.IsInlineMigratable(vol):
			translated, err := translator.TranslateInTreeInlineVolumeToCSI(klog.Background(), vol, pod.Namespace)
			if err != nil {
				continue
			}
			pv, inline = translated, true
		default:
			continue
		}
		p := podVol{name: vol.Name}
		if !inline {
			p.pvName = pv.Name
		}
		if inline || pv.Spec.CSI == nil {
			p.inTree = inTreeUnique(pv, vol)
		}
		if inline {
			csi := pv.Spec.CSI
			p.volRef = volRef{key: csiKey(csi.Driver, csi.VolumeHandle), unique: uniqueName(csi.Driver, csi.VolumeHandle),
				rwo: readWriteOnce(pv.Spec.AccessModes), desc: "inline:" + csi.VolumeHandle}
			p.csiDriver, p.csiHandle = csi.Driver, csi.VolumeHandle
		} else {
			p.volRef = pvRef(pv)
			if p.key == "" {
				continue
			}
			if pv.Spec.CSI != nil {
				p.csiDriver, p.csiHandle = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
			} else if translated, err := translator.TranslateInTreePVToCSI(klog.Background(), pv); err == nil && translated.Spec.CSI != nil {
				p.csiDriver, p.csiHandle = translated.Spec.CSI.Driver, translated.Spec.CSI.VolumeHandle
			}
		}
		out = append(out, p)
	}
	return out
}

// inTreeUnique is the unique name the in-tree plugin lists a volume under: kubernetes.io/gce-pd/<disk>
// for the gce-pd volumes the checker can tell apart; empty for others.
func inTreeUnique(pv *v1.PersistentVolume, vol *v1.Volume) string {
	switch {
	case vol != nil && vol.GCEPersistentDisk != nil:
		return "kubernetes.io/gce-pd/" + vol.GCEPersistentDisk.PDName
	case pv != nil && pv.Spec.GCEPersistentDisk != nil:
		return "kubernetes.io/gce-pd/" + pv.Spec.GCEPersistentDisk.PDName
	}
	return ""
}

// podsUsing counts the pods on node with a volume of the given key.
func (c *Checker) podsUsing(key, node string) int {
	if key == "" {
		return 0
	}
	n := 0
	for _, pod := range c.pods {
		if pod.Spec.NodeName != node || !wantsVolumes(pod) {
			continue
		}
		if slices.ContainsFunc(c.podVolumes(pod), func(p podVol) bool { return p.key == key }) {
			n++
		}
	}
	return n
}

// wantsVolumes is upstream's rule (the attach/detach controller's desired state, with
// IsPodTerminated): a pod's volumes are wanted until it has succeeded or failed, or has been
// deleted with none of its containers running, as a pod on a stopped kubelet stays.
func wantsVolumes(pod *v1.Pod) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp == nil {
		return true
	}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, st := range statuses {
			if st.State.Terminated == nil && st.State.Waiting == nil {
				return true
			}
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

func (c *Checker) sortedNodes() []*v1.Node {
	out := make([]*v1.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Convergence checks the end state, the latest state applied: every attachable volume of
// every pod on an existing node is attached there and listed in the node's status (a CSI
// volume, native or migrated, by an attached VolumeAttachment; an in-tree one by its in-tree
// unique name; a migratable in-tree volume either way), and nothing is attached that no pod
// on its (existing) node uses: no VolumeAttachment (by PersistentVolume, also a deleted one,
// or inline spec), no in-tree volume in node status, and no CSI volume listed without an
// attached VolumeAttachment. A pod volume whose PersistentVolume is gone cannot be attached
// anew and is not required to be. It returns the problems without recording them, so a
// caller can poll until it is empty, and RecordConvergence the last answer.
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
		if node == nil || !wantsVolumes(pod) {
			continue
		}
		for _, vol := range c.podVolumes(pod) {
			if vol.pvName != "" && c.pvs[vol.pvName] == nil {
				continue // its PersistentVolume is gone: nothing to attach it with
			}
			if problem := c.attachedForPod(node, vol); problem != "" {
				add("pod %s on %s: %s", key, node.Name, problem)
			}
		}
	}
	for _, va := range c.sortedVAs() {
		ref := c.vaRef(va)
		switch {
		case c.nodes[va.Spec.NodeName] == nil:
			add("VA %s (%s) left on deleted node %s", va.Name, ref.desc, va.Spec.NodeName)
		case c.podsUsing(ref.key, va.Spec.NodeName) == 0:
			add("VA %s (%s on %s) left with no pod using it on the node (deleting=%t)", va.Name, ref.desc, va.Spec.NodeName, va.DeletionTimestamp != nil)
		}
	}
	for _, node := range c.sortedNodes() {
		for _, av := range node.Status.VolumesAttached {
			name := string(av.Name)
			if !strings.HasPrefix(name, csiPrefix) {
				if c.podsUsing(inTreeKey(name), node.Name) == 0 {
					add("in-tree volume %s left listed on %s with no pod using it", name, node.Name)
				}
				continue
			}
			if !slices.ContainsFunc(c.sortedVAs(), func(va *storagev1.VolumeAttachment) bool {
				return va.Spec.NodeName == node.Name && va.Status.Attached && c.vaRef(va).unique == name
			}) {
				add("%s listed on %s without an attached VolumeAttachment", name, node.Name)
			}
		}
	}
	return out
}

// attachedForPod says what is missing for vol of a pod on node to be attached, "" if
// nothing: a CSI attachment (a VolumeAttachment by the kubelet's name, attached and not
// deleting, listed in node status), or for an in-tree volume its in-tree listing.
func (c *Checker) attachedForPod(node *v1.Node, vol podVol) string {
	listedAs := func(u string) bool {
		return slices.ContainsFunc(node.Status.VolumesAttached, func(av v1.AttachedVolume) bool { return string(av.Name) == u })
	}
	if vol.inTree != "" && listedAs(vol.inTree) {
		return "" // attached in-tree
	}
	if vol.csiDriver == "" {
		return fmt.Sprintf("in-tree volume %s (%s) not listed", vol.inTree, vol.desc)
	}
	name := VAName(vol.csiHandle, vol.csiDriver, node.Name)
	va := c.vas[name]
	switch {
	case va == nil:
		return fmt.Sprintf("no VA %s for %s", name, vol.desc)
	case va.DeletionTimestamp != nil || !va.Status.Attached:
		return fmt.Sprintf("VA %s for %s attached=%t deleting=%t", name, vol.desc, va.Status.Attached, va.DeletionTimestamp != nil)
	case !listedAs(vol.unique):
		return fmt.Sprintf("%s attached but not listed in node status", vol.desc)
	}
	return ""
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

// Counts returns how many times each invariant was checked, and how many inline, PV-less
// and in-tree attachments the checks met (CoveredInline, CoveredPVLess, CoveredInTree).
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

// Summary is a one-line count of checks and violations per invariant, and of the inline,
// PV-less and in-tree attachments met, for the test log.
func Summary(counts map[string]int, violations []Violation) string {
	byInv := map[string]int{}
	for _, v := range violations {
		byInv[v.Invariant]++
	}
	var parts []string
	for _, inv := range []string{DetachWhileInUse, DetachOrder, MultiAttach, Convergence} {
		parts = append(parts, fmt.Sprintf("%s: %d checked, %d violated", inv, counts[inv], byInv[inv]))
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; met %d inline VAs, %d PV-less VAs, %d in-tree attaches",
		counts[CoveredInline], counts[CoveredPVLess], counts[CoveredInTree])
}

// readWriteOnce says whether a volume with these access modes may be attached to one node
// only (no modes: ReadWriteOnce).
func readWriteOnce(modes []v1.PersistentVolumeAccessMode) bool {
	for _, m := range modes {
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

func uniqueName(driver, handle string) string { return csiPrefix + driver + "^" + handle }

// VAName is the VolumeAttachment name the kubelet expects for a CSI volume on a node.
func VAName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}
