package attachstate

import (
	"errors"
	"fmt"
	"sort"
)

// Check reports every invariant of the memory that does not hold now; tests call it after
// every step they drive. It reads the memory and the store under the lock and changes
// nothing. What it checks:
//
//   - The create expectations' indexes agree with each other: every expectation is found by
//     its name, its node and its volume, and nothing else is.
//   - An expectation's volume is never held by another node's reservation (a reservation is
//     made only when no other node has the volume, and ends before another can take it).
//   - An in-tree attachment's tombstone never names an attachment memory holds, and only
//     nodes with in-tree attachments have a verification time.
//   - Every entry is bounded by live objects: each node memory keeps anything for is in the
//     Node store, or still has VolumeAttachments in the store or expected.
//
// Invariants that need the API server's truth (ReadWriteOnce exclusivity across nodes, no
// detach of a volume in use, node status dropping only what is detached) are checked by the
// tests against their recorded API, as the interleaving explorer does.
func (m *State) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error

	n := 0
	for name, e := range m.expected.byName {
		if e.va.Name != name {
			errs = append(errs, fmt.Errorf("expectation %q holds VolumeAttachment %q", name, e.va.Name))
		}
		if m.expected.byNode[e.node][name] != e {
			errs = append(errs, fmt.Errorf("expectation %q missing from the index of node %q", name, e.node))
		}
		if e.volume != "" && m.expected.byVolume[e.volume][name] != e {
			errs = append(errs, fmt.Errorf("expectation %q missing from the index of volume %q", name, e.volume))
		}
		if holder := m.reservations[e.volume]; e.volume != "" && holder != "" && holder != e.node {
			errs = append(errs, fmt.Errorf("volume %s is expected on node %q and reserved for node %q", e.volume, e.node, holder))
		}
	}
	for node, byNode := range m.expected.byNode {
		n += len(byNode)
		if len(byNode) == 0 {
			errs = append(errs, fmt.Errorf("empty expectation index kept for node %q", node))
		}
	}
	if n != len(m.expected.byName) {
		errs = append(errs, fmt.Errorf("%d expectations by node, %d by name", n, len(m.expected.byName)))
	}

	for node, forgotten := range m.inTreeForgotten {
		for unique := range forgotten {
			if _, ok := m.inTree[node][unique]; ok {
				errs = append(errs, fmt.Errorf("in-tree attachment %s of node %q is both held and forgotten", unique, node))
			}
		}
	}
	for volume, w := range m.waiters {
		if len(w.nodes) == 0 {
			errs = append(errs, fmt.Errorf("no node waits for volume %s, yet its entry is kept", volume))
		}
	}
	for name, volume := range m.sources.volumeOf {
		if _, unnamed := m.sources.unnamed[name]; unnamed {
			errs = append(errs, fmt.Errorf("VolumeAttachment %s is filed under volume %s and as unnamed", name, volume))
		}
	}
	for node := range m.inTreeVerified {
		if len(m.inTree[node]) == 0 {
			errs = append(errs, fmt.Errorf("verification time kept for node %q, which has no in-tree attachment", node))
		}
	}

	live := func(node string) bool {
		return m.opts.Store.NodeKnown(node) || len(m.opts.Store.VolumeAttachmentsOnNode(node)) > 0 || len(m.expected.byNode[node]) > 0
	}
	perNode := map[string][]string{}
	noteNodes(perNode, "inTree", m.inTree)
	noteNodes(perNode, "inTreeForgotten", m.inTreeForgotten)
	noteNodes(perNode, "managed", m.managed)
	noteNodes(perNode, "detaching", m.detaching)
	noteNodes(perNode, "held", m.held)
	noteNodes(perNode, "events", m.events)
	noteNodes(perNode, "written", m.written)
	noteNodes(perNode, "unlistedSince", m.unlistedSince)
	for _, node := range sortedKeys(perNode) {
		if !live(node) {
			errs = append(errs, fmt.Errorf("memory %v kept for node %q, which has neither a Node nor a VolumeAttachment", perNode[node], node))
		}
	}
	return errors.Join(errs...)
}

// noteNodes records, for each node a per-node map has an entry for, the map's name.
func noteNodes[V any](perNode map[string][]string, what string, m map[string]V) {
	for node := range m {
		perNode[node] = append(perNode[node], what)
	}
}

// Leftovers lists what memory still holds once the cluster has quiesced with every pod
// deleted and every VolumeAttachment gone: memory about volumes, pods and VolumeAttachments
// must all be gone by then (otherwise it grows with churn). Per-node bookkeeping of the live
// nodes is bounded by the cluster and allowed: whether a node is managed, and a status write
// not yet read back.
func (m *State) Leftovers(liveNodes map[string]bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	count := func(what string, keys []string) {
		if len(keys) > 0 {
			sort.Strings(keys)
			out = append(out, fmt.Sprintf("%s: %v", what, keys))
		}
	}
	count("expected.byName", sortedKeys(m.expected.byName))
	count("expected.byNode", sortedKeys(m.expected.byNode))
	count("expected.byVolume", sortedKeys(m.expected.byVolume))
	var sources []string
	m.sources.byVolume.Range(func(k string, _ []vaOnNode) bool {
		sources = append(sources, k)
		return true
	})
	count("sources", sources)
	count("sources.volumeOf", sortedKeys(m.sources.volumeOf))
	count("sources.unnamed", sortedKeys(m.sources.unnamed))
	count("deletes", sortedKeys(m.deletes))
	count("reservations", sortedKeys(m.reservations))
	count("detachVolumes", sortedKeys(m.detachVolumes))
	count("waiters", sortedKeys(m.waiters))
	var held, events []string
	for _, byNode := range m.held {
		for k := range byNode {
			held = append(held, k.Node+"/"+k.Pod+"/"+k.Volume)
		}
	}
	for node, byNode := range m.events {
		for k := range byNode {
			events = append(events, node+" "+k.Pod+" "+k.Reason)
		}
	}
	count("held", held)
	count("events", events)
	count("creating", sortedKeys(m.creating))
	for node, byNode := range m.detaching {
		if len(byNode) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("detaching[%s]: %d entries", node, len(byNode)))
		}
	}
	for node, byNode := range m.inTree {
		if len(byNode) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("inTree[%s]: %d entries", node, len(byNode)))
		}
	}
	for node := range m.inTreeVerified {
		if !liveNodes[node] {
			out = append(out, "inTreeVerified["+node+"]")
		}
	}
	for node, byNode := range m.inTreeForgotten {
		if len(byNode) > 0 || !liveNodes[node] {
			out = append(out, fmt.Sprintf("inTreeForgotten[%s]: %d entries", node, len(byNode)))
		}
	}
	for node := range m.managed {
		if !liveNodes[node] {
			out = append(out, "managed["+node+"]")
		}
	}
	for node := range m.unlistedSince {
		out = append(out, "unlistedSince["+node+"]")
	}
	for node := range m.written {
		if !liveNodes[node] {
			out = append(out, "written["+node+"]")
		}
	}
	sort.Strings(out)
	return out
}
