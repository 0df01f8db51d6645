package adc

import (
	"errors"
	"fmt"
)

// checkMemory reports every invariant of the controller's memory (world) that does not hold
// now. Tests call it after every step they drive (the safety tests, the interleaving
// explorer); it reads the memory and the informer stores under the controller's lock and
// changes nothing. The invariants:
//
//   - The create expectations' indexes agree with each other: every expectation is found by
//     its name, its node and its volume, and nothing else is.
//   - An in-tree attachment's tombstone (inTreeForgotten) never names an attachment adc holds,
//     and only nodes with in-tree attachments have a verification time.
//   - Every entry is bounded by live objects: each node that memory keeps anything for is in
//     the Node store, or still has VolumeAttachments in the store or expected; nothing grows
//     with churn.
//
// Invariants that need the API server's truth (ReadWriteOnce exclusivity, no detach of a
// volume in use, node status dropping only what is detached) are checked by the tests
// against their recorded API, as the interleaving explorer does.
func (c *Controller) checkMemory() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.world
	var errs []error

	n := 0
	for name, e := range w.expectedVAs.byName {
		if e.va.Name != name {
			errs = append(errs, fmt.Errorf("expectation %q holds VolumeAttachment %q", name, e.va.Name))
		}
		if w.expectedVAs.byNode[e.node][name] != e {
			errs = append(errs, fmt.Errorf("expectation %q missing from the index of node %q", name, e.node))
		}
		if e.sourceKey != "" && w.expectedVAs.bySource[e.sourceKey][name] != e {
			errs = append(errs, fmt.Errorf("expectation %q missing from the index of volume %q", name, e.sourceKey))
		}
	}
	for node, m := range w.expectedVAs.byNode {
		n += len(m)
		if len(m) == 0 {
			errs = append(errs, fmt.Errorf("empty expectation index kept for node %q", node))
		}
	}
	if n != len(w.expectedVAs.byName) {
		errs = append(errs, fmt.Errorf("%d expectations by node, %d by name", n, len(w.expectedVAs.byName)))
	}

	for node, forgotten := range w.inTreeForgotten {
		for unique := range forgotten {
			if _, ok := w.inTree[node][unique]; ok {
				errs = append(errs, fmt.Errorf("in-tree attachment %s of node %q is both held and forgotten", unique, node))
			}
		}
	}
	for node := range w.inTreeVerified {
		if len(w.inTree[node]) == 0 {
			errs = append(errs, fmt.Errorf("verification time kept for node %q, which has no in-tree attachment", node))
		}
	}

	live := func(node string) bool {
		if _, err := c.nodes.Get(node); err == nil {
			return true
		}
		if objs, _ := c.vas.ByIndex(vaByNodeIndex, node); len(objs) > 0 {
			return true
		}
		return len(w.expectedVAs.byNode[node]) > 0
	}
	perNode := map[string][]string{}
	noteNodes(perNode, "inTree", w.inTree)
	noteNodes(perNode, "inTreeForgotten", w.inTreeForgotten)
	noteNodes(perNode, "managed", w.managed)
	noteNodes(perNode, "detaching", w.detaching)
	noteNodes(perNode, "held", w.held)
	noteNodes(perNode, "events", w.events)
	noteNodes(perNode, "written", w.written)
	noteNodes(perNode, "unlistedSince", w.unlistedSince)
	for node, what := range perNode {
		if !live(node) {
			errs = append(errs, fmt.Errorf("memory %v kept for node %q, which has neither a Node nor a VolumeAttachment", what, node))
		}
	}
	return errors.Join(errs...)
}

// noteNodes records, for each node a per-node memory map has an entry for, the map's name.
func noteNodes[V any](perNode map[string][]string, what string, m map[string]V) {
	for node := range m {
		perNode[node] = append(perNode[node], what)
	}
}
