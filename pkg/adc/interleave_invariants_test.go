package adc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"

	"github.com/migration-aware/adc/pkg/migration"
)

// violation is one broken invariant, with the step that broke it.
type violation struct {
	kind   string
	detail string
	step   int
}

// The invariant kinds, as reported.
const (
	invRWO            = "rwo-exclusive"
	invDetachInUse    = "detach-in-use"
	invDetachListed   = "detach-while-listed"
	invDetachMounted  = "detach-mounted"
	invStatusDrop     = "status-drops-in-use"
	invExpectation    = "expectation-without-evidence"
	invMemory         = "memory-not-empty"
	invRedundant      = "redundant-create"
	invNoQuiescence   = "no-quiescence"
	invLeftAttachment = "attachment-left-behind"
	invStuck          = "pod-left-waiting"
	invPanic          = "panic"
	// invHarness: the explorer's own model of the controller's locks is wrong.
	invHarness = "harness-lock-model"
)

func (h *harness) violate(kind, detail string) {
	detail = h.short(detail)
	h.violations = append(h.violations, violation{kind: kind, detail: detail, step: h.stepCount})
	h.trace = append(h.trace, "     !! "+kind+": "+detail)
}

// checkStep checks, after every step, the invariants that are about the state (the ones
// about a single API call are checked when the API server applies it).
func (h *harness) checkStep(before map[string]memExpectation) {
	h.checkRWOExclusive()
	h.checkExpectationEvidence(before)
}

// checkRWOExclusive: from the moment a ReadWriteOnce volume has a VolumeAttachment on node A
// in the API server until that object is gone, no VolumeAttachment of the volume exists for
// another node. Two nodes writing one ReadWriteOnce filesystem corrupt it; this is the
// controller's first duty. A volume is its disk, whatever PersistentVolume names it (two
// PersistentVolumes of one disk, one re-created while the old one's object is still there,
// an in-tree one and its CSI twin): objects are grouped by the disk their PersistentVolume
// names in the world (deleted ones too), or their own name proves (diskOfVA), never by the
// PersistentVolume name alone.
func (h *harness) checkRWOExclusive() {
	byDisk := map[string][]*storagev1.VolumeAttachment{}
	for _, va := range h.api.vas {
		u := h.w.diskOfVA(va)
		byDisk[u] = append(byDisk[u], va)
	}
	disks := make([]string, 0, len(byDisk))
	for u := range byDisk {
		disks = append(disks, u)
	}
	sort.Strings(disks)
	for _, u := range disks {
		vas := byDisk[u]
		if u == "" || !h.w.diskRWO(u) || len(vas) < 2 {
			continue
		}
		sort.Slice(vas, func(i, j int) bool { return rvLess(vas[i].ResourceVersion, vas[j].ResourceVersion) })
		for _, later := range vas[1:] {
			if later.Spec.NodeName != vas[0].Spec.NodeName {
				h.violate(invRWO, fmt.Sprintf("ReadWriteOnce %s has VolumeAttachments on %s (%s, PersistentVolume %s) and %s (%s, PersistentVolume %s); %s",
					u, vas[0].Spec.NodeName, vas[0].Name, orNoPV(pvOfVA(vas[0])), later.Spec.NodeName, later.Name, orNoPV(pvOfVA(later)), h.whyForgotten(vas[0])))
				return
			}
		}
	}
}

func orNoPV(pv string) string {
	if pv == "" {
		return "none"
	}
	return pv
}

// whyForgotten explains how the controller lost track of the VolumeAttachment that was
// there first: how its create expectation ended, and whether the handler had shown it.
func (h *harness) whyForgotten(va *storagev1.VolumeAttachment) string {
	shown := "its handler had not run"
	if memoryKnowsVA(h.c, va) {
		shown = "the handler had shown it"
	}
	ended := h.expEnded[va.Name]
	if ended == "" {
		ended = "never expected"
	}
	return fmt.Sprintf("by the time the second create landed, %s's create expectation had ended (%s) and %s", va.Name, ended, shown)
}

func rvLess(a, b string) bool {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x < y
}

// forcedDetach reports whether adc may detach from node what the kubelet reports in use:
// the node is deleted, or the volume's detach rule (pure, pkg/migration) says so for the
// node as the API server has it: out of service, accepted evidence, or the timeout.
func (h *harness) forcedDetach(node, driver string) bool {
	n := h.api.nodes[node]
	if n == nil {
		return true
	}
	return h.c.DetachRules().For(migration.DetachVolume{Driver: driver}).Verdict(n, h.clk.Now()).Force
}

// checkDelete is checked when the API server applies a VolumeAttachment delete (unless the
// detach is forced: node out of service, not Ready too long, or deleted):
//
//   - no detach of a volume in use: never while the node reports it in status.volumesInUse.
//     One window no controller can close is left out: the kubelet may start reporting it
//     after the controller's fresh Node read and before the delete lands; that read is
//     what the controller decides on, and the kubelet cannot mount the volume then (the
//     node status no longer lists it, which the checks below hold). So it is a violation
//     when the volume was in use already at the deleting worker's fresh read (or the worker
//     read nothing fresh);
//   - never while a kubelet has it mounted;
//   - the node's status.volumesAttached stops listing the volume before its
//     VolumeAttachment is deleted, so a kubelet never mounts a volume being detached.
func (h *harness) checkDelete(c *apiCall) {
	va := h.api.vas[c.name]
	if va == nil || (c.uid != "" && va.UID != c.uid) || va.DeletionTimestamp != nil {
		return
	}
	node := h.api.nodes[va.Spec.NodeName]
	u := h.w.diskOfVA(va)
	if node == nil || u == "" || h.forcedDetach(va.Spec.NodeName, va.Spec.Attacher) {
		return
	}
	key := node.Name + "|" + u
	read := -1
	if c.thread != nil {
		read = c.thread.freshReadStep
	}
	if inUse(node, u) && (read < 0 || h.inUseBefore(key, read)) {
		h.violate(invDetachInUse, fmt.Sprintf("%s deleted while node %s reports %s in use (since step %d; the worker's fresh read was at step %d)",
			c.name, node.Name, u, h.inUseSince[key], read))
	}
	if h.kubelet.mounted(node.Name, u) {
		h.violate(invDetachMounted, fmt.Sprintf("%s deleted while the kubelet of %s has %s mounted", c.name, node.Name, u))
	}
	if listed(node, u) {
		h.violate(invDetachListed, fmt.Sprintf("%s deleted while node %s still lists %s in status.volumesAttached", c.name, node.Name, u))
	}
}

// checkStatusPatch is checked when the API server applies a status.volumesAttached patch:
// node status never drops a volume that may still be attached and in use (its
// VolumeAttachment exists attached, not being deleted, and the kubelet reports it in use),
// unless the detach is forced. Left out, as for deletes: a volume the controller decided to
// detach on a fresh Node read that showed it unused, and that came into use after that read.
func (h *harness) checkStatusPatch(c *apiCall) {
	node := h.api.nodes[c.name]
	if node == nil {
		return
	}
	kept := map[v1.UniqueVolumeName]bool{}
	for _, v := range c.volumes {
		kept[v.Name] = true
	}
	for _, av := range node.Status.VolumesAttached {
		u := string(av.Name)
		if kept[av.Name] || !inUse(node, u) || !h.attachedIn(c.name, u) {
			continue
		}
		if driver, _, ok := migration.ParseCSIUniqueName(u); !ok || h.forcedDetach(c.name, driver) {
			continue
		}
		key := c.name + "|" + u
		read, decided := c.detaching[key]
		switch {
		case !decided:
			h.violate(invStatusDrop, fmt.Sprintf("status patch of %s drops %s, attached and in use, which the controller had not decided to detach", c.name, u))
		case h.inUseBefore(key, read):
			h.violate(invStatusDrop, fmt.Sprintf("status patch of %s drops %s, attached and in use since step %d, before the fresh read (step %d) the detach was decided on",
				c.name, u, h.inUseSince[key], read))
		}
	}
}

// checkExpectationEvidence: a create expectation ends only on evidence about that very object
// (same UID): the handler showed it (or its deletion), the store holds it or has synced past
// it, an object under its name newer than it is in the store, or its create failed. An object
// with the same name and another UID says nothing about it.
func (h *harness) checkExpectationEvidence(before map[string]memExpectation) {
	after := memoryExpectations(h.c)
	for name, e := range before {
		if _, ok := after[name]; ok {
			// Still expected, or filled in by its create's answer, or replaced by a new create.
			continue
		}
		uid := e.uid
		if !e.stored {
			uid = h.createTarget(name)
		}
		why, ok := h.expectationEvidence(name, e, uid)
		h.expEnded[name] = why
		if !ok {
			h.violate(invExpectation, fmt.Sprintf("the create expectation of %s (object %s) ended although %s", name, orNone(uid), why))
		}
	}
}

// createTarget is the object a create still in flight stands for: the one it created or
// found under its name once applied; otherwise the object that holds the name now (the
// create finds it, AlreadyExists, or a retry will), unless that one is being deleted.
func (h *harness) createTarget(name string) types.UID {
	if c := h.inflightCreate[name]; c != nil && c.applied && c.resultUID != "" {
		return c.resultUID
	}
	if va := h.api.vas[name]; va != nil && va.DeletionTimestamp == nil {
		return va.UID
	}
	return ""
}

func orNone(uid types.UID) string {
	if uid == "" {
		return "not created yet"
	}
	return string(uid)
}

// expectationEvidence says what ended an expectation and whether that is evidence about the
// expected object.
func (h *harness) expectationEvidence(name string, e memExpectation, uid types.UID) (string, bool) {
	if h.ev.createFailed[name] {
		return "its create failed", true
	}
	if uids := h.ev.shown[name]; len(uids) > 0 {
		var shown []string
		for i, u := range uids {
			if u == uid && uid != "" {
				return fmt.Sprintf("the handler showed it (%s)", h.ev.shownTypes[name][i]), true
			}
			shown = append(shown, fmt.Sprintf("%s %s", h.ev.shownTypes[name][i], u))
		}
		return "the handler showed only another object under its name: " + strings.Join(shown, ", "), false
	}
	if h.ev.checker && e.stored {
		obj, inStore, _ := h.vas.GetByKey(name)
		if va, ok := cached.VAOf(obj); inStore && ok {
			switch {
			case va.UID == uid && memoryKnowsVA(h.c, va):
				return "the checker found it in the store (the handler had shown it)", true
			case va.UID == uid:
				return "the checker found it in the store before its handler ran", true
			case rvLess(e.createRV, va.ResourceVersion):
				return "the checker found a newer object under its name", true
			}
			return "the checker found an older object " + string(va.UID) + " under its name", false
		}
		if !rvLess(h.vas.rv, e.createRV) {
			return fmt.Sprintf("the checker found the store synced to %s, past its create at %s, without it", h.vas.rv, e.createRV), true
		}
		return "the checker ended it with the store behind its create and without it", false
	}
	if obj, inStore, _ := h.vas.GetByKey(name); inStore && uid != "" {
		if va, ok := cached.VAOf(obj); ok && va.UID == uid {
			// createdVA observes the object from the store when the create's answer finds it
			// there before its handler ran.
			return "the store holds that very object (observed from the store)", true
		}
	}
	return "nothing in the step was about it", false
}

// checkRedundantCreate: a worker that read the node's VolumeAttachments while one was still
// expected (created, not yet in the store) must count it as there. If it then sends that
// object's create again although the store has it by now, its read of the store and of the
// expectations were torn apart: the object had moved from one to the other in between.
func (h *harness) checkRedundantCreate(t *thread, c *apiCall) {
	if !t.readExpected[c.name] || t.readSeen[c.name] {
		return
	}
	if _, inStore, _ := h.vas.GetByKey(c.name); inStore {
		h.violate(invRedundant, fmt.Sprintf("%s creates %s again: it was expected when the worker read the store without it, and the store holds it now", t.label(), c.name))
	}
}

// checkQuiescent runs once the world has quiesced after every pod was deleted: every
// VolumeAttachment is gone, and the controller's memory is empty (bounded memory: nothing
// about volumes, pods or VolumeAttachments outlives them).
func (h *harness) checkQuiescent() {
	if len(h.api.vas) > 0 {
		var names []string
		for n := range h.api.vas {
			names = append(names, n)
		}
		sort.Strings(names)
		h.violate(invLeftAttachment, fmt.Sprintf("every pod is gone and the world is quiet, but VolumeAttachments remain: %v", names))
		return
	}
	live := map[string]bool{}
	for n := range h.api.nodes {
		live[n] = true
	}
	if left := memoryLeftovers(h.c, live); len(left) > 0 {
		h.violate(invMemory, "every pod and VolumeAttachment is gone, but the controller still remembers: "+strings.Join(left, "; "))
	}
}

// checkSettled runs when the world first quiesces with its pods still there: every volume a
// pod wants is attached to the pod's node and listed in its status, unless it is a
// ReadWriteOnce volume another node still has a VolumeAttachment of (then the pod waits for
// that one to go, which needs a change that will wake it). A pod left waiting in a quiet
// world waits until something unrelated wakes its node. A volume is its disk, by whatever
// PersistentVolume the pod or the other node's object names it.
func (h *harness) checkSettled() {
	var keys []string
	for k := range h.api.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := h.api.pods[k]
		for _, vol := range h.w.volumes {
			if !h.podUses(p.Spec.NodeName, vol.pv) {
				continue
			}
			u := h.w.uniqueName(vol.pv)
			elsewhere := false
			for _, va := range h.api.vas {
				if h.w.diskOfVA(va) == u && va.Spec.NodeName != p.Spec.NodeName {
					elsewhere = true
				}
			}
			node := h.api.nodes[p.Spec.NodeName]
			if (h.w.diskRWO(u) && elsewhere) || (h.attachedIn(p.Spec.NodeName, u) && listed(node, u)) {
				continue
			}
			h.violate(invStuck, fmt.Sprintf("the world is quiet but pod %s waits for %s on %s: not attached and listed, and no other node holds it", k, vol.pv, p.Spec.NodeName))
			return
		}
	}
}
