package adc

import (
	"fmt"
	"sort"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The interleaving explorer reads the controller's memory (c.world) only through the
// functions of this file. The memory is being reworked (it may move into its own type or
// package); when it does, only this file has to follow.

// memExpectation is one pending VolumeAttachment create expectation, as the explorer judges it.
type memExpectation struct {
	name, node string
	// stored: the create returned, uid and createRV are what the API server stored.
	stored   bool
	uid      types.UID
	createRV string
}

// memoryExpectations returns the pending create expectations by VolumeAttachment name.
func memoryExpectations(c *Controller) map[string]memExpectation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]memExpectation, len(c.world.expectedVAs.byName))
	for name, e := range c.world.expectedVAs.byName {
		out[name] = memExpectation{name: name, node: e.va.Spec.NodeName, stored: e.stored, uid: e.va.UID, createRV: e.va.ResourceVersion}
	}
	return out
}

// memoryKnowsVA reports whether the controller's ReadWriteOnce index (filled by the
// VolumeAttachment handler) holds va on its node.
func memoryKnowsVA(c *Controller, va *storagev1.VolumeAttachment) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return memoryKnowsVALocked(c, va)
}

// memoryKnowsVALocked is memoryKnowsVA with c.mu held (by a mutant, on a worker's thread).
func memoryKnowsVALocked(c *Controller, va *storagev1.VolumeAttachment) bool {
	k, ok := vaVolumeKey(va)
	if !ok {
		return false
	}
	for _, v := range c.world.vaSources.m.values(k) {
		if v.name == va.Name && v.node == va.Spec.NodeName {
			return true
		}
	}
	return false
}

// memoryDetaching returns the volumes the controller has marked detaching (to be dropped
// from node status before their detach), as node|unique name.
func memoryDetaching(c *Controller) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for node, m := range c.world.detaching {
		for u := range m {
			out[node+"|"+u] = true
		}
	}
	return out
}

// memoryCheckerHasWork reports whether checkExpectations would look at anything: a stored
// create expectation or a delete request. When it has none it returns at once, so the
// explorer does not offer it as a step.
func memoryCheckerHasWork(c *Controller) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.world.deleteRequested) > 0 {
		return true
	}
	for _, e := range c.world.expectedVAs.byName {
		if e.stored || e.uncertain {
			return true
		}
	}
	return false
}

// memoryHasUncertain reports whether a create whose answer was lost waits for the checker's
// read (checkUncertain).
func memoryHasUncertain(c *Controller) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.world.expectedVAs.byName {
		if e.uncertain && !e.stored {
			return true
		}
	}
	return false
}

// memoryCheckerDigest is the part of the memory checkExpectations reads: the create
// expectations and the delete requests.
func memoryCheckerDigest(c *Controller) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for name, e := range c.world.expectedVAs.byName {
		lines = append(lines, fmt.Sprintf("exp %s %t %s %s", name, e.stored, e.va.UID, e.va.ResourceVersion))
	}
	for name, r := range c.world.deleteRequested {
		lines = append(lines, fmt.Sprintf("del %s %s", name, r.uid))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// memoryDigest is a canonical text of everything in the controller's memory that can change
// a later decision. The explorer hashes it into its state key (two schedules that reach the
// same world and the same memory behave the same from there on) and prints it in traces.
func memoryDigest(c *Controller) string {
	var b strings.Builder
	c.mu.Lock()
	w := c.world
	var lines []string
	for name, e := range w.expectedVAs.byName {
		lines = append(lines, fmt.Sprintf("exp %s node=%s stored=%t uid=%s rv=%s", name, e.va.Spec.NodeName, e.stored, e.va.UID, e.va.ResourceVersion))
	}
	for k := range w.vaSources.m.one {
		for _, v := range w.vaSources.m.values(k) {
			lines = append(lines, fmt.Sprintf("src %s%s %s@%s", k.pv, k.inline, v.name, v.node))
		}
	}
	for name, r := range w.deleteRequested {
		lines = append(lines, fmt.Sprintf("del %s uid=%s", name, r.uid))
	}
	for key, node := range w.reservations {
		lines = append(lines, fmt.Sprintf("rsv %s %s", key, node))
	}
	for key, nodes := range w.waiters {
		for n := range nodes {
			lines = append(lines, fmt.Sprintf("wait %s %s", key, n))
		}
	}
	for node, m := range w.detaching {
		for u := range m {
			lines = append(lines, fmt.Sprintf("detaching %s %s", node, u))
		}
	}
	for node, n := range w.creating {
		lines = append(lines, fmt.Sprintf("creating %s %d", node, n))
	}
	for node, ws := range w.written {
		var vols []string
		for _, v := range ws.volumes {
			vols = append(vols, string(v.Name))
		}
		lines = append(lines, fmt.Sprintf("written %s rv=%s %v", node, ws.resourceVersion, vols))
	}
	for node := range w.unlistedSince {
		lines = append(lines, "unlisted "+node)
	}
	for _, m := range w.held {
		for k, h := range m {
			lines = append(lines, fmt.Sprintf("held %s/%s/%s %d", k.node, k.pod, k.volume, h.retries))
		}
	}
	for node, m := range w.events {
		for k := range m {
			lines = append(lines, fmt.Sprintf("event %s %s %s", node, k.pod, k.reason))
		}
	}
	for name := range w.attaching {
		lines = append(lines, "attachingOp "+name)
	}
	for name := range w.detachingOps {
		lines = append(lines, "detachingOp "+name)
	}
	for node, m := range w.inTree {
		for u := range m {
			lines = append(lines, fmt.Sprintf("intree %s %s", node, u))
		}
	}
	c.mu.Unlock()
	// The pair snapshot decides whether an attached VolumeAttachment needs a reconcile
	// (markAttached); read through the public Snapshot.
	for _, s := range c.Snapshot() {
		lines = append(lines, fmt.Sprintf("pair %s %s %s %s %s", s.Node, s.Pod, s.Volume, s.VolumeAttachment, s.Phase))
	}
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// memoryLeftovers lists what the controller still remembers once the world has quiesced with
// every pod deleted and every VolumeAttachment gone. Memory about volumes, pods and
// VolumeAttachments must all be gone by then (otherwise it grows with churn). Per-node
// bookkeeping of nodes that still exist is bounded by the cluster and allowed: the in-tree
// seeding flag, an empty detaching set, and a status write not yet read back.
func memoryLeftovers(c *Controller, liveNodes map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.world
	var out []string
	count := func(what string, keys []string) {
		if len(keys) > 0 {
			sort.Strings(keys)
			out = append(out, fmt.Sprintf("%s: %v", what, keys))
		}
	}
	count("expectedVAs.byName", keysOf(w.expectedVAs.byName))
	count("expectedVAs.byNode", keysOf(w.expectedVAs.byNode))
	count("expectedVAs.bySource", keysOf(w.expectedVAs.bySource))
	var sources []string
	for k := range w.vaSources.m.one {
		sources = append(sources, k.pv+k.inline)
	}
	count("vaSources", sources)
	count("deleteRequested", keysOf(w.deleteRequested))
	count("reservations", keysOf(w.reservations))
	count("waiters", keysOf(w.waiters))
	var held, events []string
	for _, m := range w.held {
		for k := range m {
			held = append(held, k.node+"/"+k.pod+"/"+k.volume)
		}
	}
	for node, m := range w.events {
		for k := range m {
			events = append(events, node+" "+k.pod+" "+k.reason)
		}
	}
	count("held", held)
	count("events", events)
	count("creating", keysOf(w.creating))
	count("attaching", keysOf(w.attaching))
	count("detachingOps", keysOf(w.detachingOps))
	for node, m := range w.detaching {
		if len(m) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("detaching[%s]: %d entries", node, len(m)))
		}
	}
	for node, m := range w.inTree {
		if len(m) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("inTree[%s]: %d entries", node, len(m)))
		}
	}
	for node := range w.inTreeVerified {
		if !liveNodes[node] {
			out = append(out, "inTreeVerified["+node+"]")
		}
	}
	for node, m := range w.inTreeForgotten {
		if len(m) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("inTreeForgotten[%s]: %d entries", node, len(m)))
		}
	}
	for node := range w.managed {
		if !liveNodes[node] {
			out = append(out, "managed["+node+"]")
		}
	}
	for node := range w.unlistedSince {
		out = append(out, "unlistedSince["+node+"]")
	}
	for node := range w.written {
		if !liveNodes[node] {
			out = append(out, "written["+node+"]")
		}
	}
	sort.Strings(out)
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
