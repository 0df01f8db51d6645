package attachstate

import (
	"fmt"
	"sort"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// The reads below copy what they return, under the lock. Tests (the explorer's state key and
// traces, its invariants) and diagnostics use them; the controller's decisions use the
// operations.

// Digest is a canonical text of everything in memory that can change a later decision: two
// runs that reach the same world and the same digest behave the same from there on.
func (m *State) Digest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for name, e := range m.expected.byName {
		lines = append(lines, fmt.Sprintf("exp %s node=%s stored=%t uid=%s rv=%s", name, e.va.Spec.NodeName, e.stored, e.va.UID, e.va.ResourceVersion))
	}
	m.sources.byVolume.Range(func(k string, vs []vaOnNode) bool {
		for _, v := range vs {
			lines = append(lines, fmt.Sprintf("src %s %s@%s", k, v.name, v.node))
		}
		return true
	})
	for name, r := range m.deletes {
		lines = append(lines, fmt.Sprintf("del %s uid=%s", name, r.uid))
	}
	for key, node := range m.reservations {
		lines = append(lines, fmt.Sprintf("rsv %s %s", key, node))
	}
	for name := range m.sources.unnamed {
		lines = append(lines, "unnamed "+name)
	}
	for key, w := range m.waiters {
		for n := range w.nodes {
			lines = append(lines, fmt.Sprintf("wait %s %s", key, n))
		}
	}
	for node, byNode := range m.detaching {
		for u := range byNode {
			lines = append(lines, fmt.Sprintf("detaching %s %s", node, u))
		}
	}
	for node, n := range m.creating {
		lines = append(lines, fmt.Sprintf("creating %s %d", node, n))
	}
	for node, ws := range m.written {
		var vols []string
		for _, v := range ws.volumes {
			vols = append(vols, string(v.Name))
		}
		lines = append(lines, fmt.Sprintf("written %s rv=%s %v", node, ws.resourceVersion, vols))
	}
	for node := range m.unlistedSince {
		lines = append(lines, "unlisted "+node)
	}
	for _, byNode := range m.held {
		for k, h := range byNode {
			lines = append(lines, fmt.Sprintf("held %s/%s/%s %d", k.Node, k.Pod, k.Volume, h.retries))
		}
	}
	for node, byNode := range m.events {
		for k := range byNode {
			lines = append(lines, fmt.Sprintf("event %s %s %s", node, k.Pod, k.Reason))
		}
	}
	for node, byNode := range m.inTree {
		for u := range byNode {
			lines = append(lines, fmt.Sprintf("intree %s %s", node, u))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// ExpectationInfo is one pending create expectation as a test judges it.
type ExpectationInfo struct {
	Node string
	// Stored: the create returned; the UID and CreateRV are what the API server stored.
	Stored, Uncertain bool
	UID               string
	CreateRV          string
}

// Expectations returns the pending create expectations by VolumeAttachment name.
func (m *State) Expectations() map[string]ExpectationInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]ExpectationInfo, len(m.expected.byName))
	for name, e := range m.expected.byName {
		out[name] = ExpectationInfo{Node: e.va.Spec.NodeName, Stored: e.stored, Uncertain: e.uncertain, UID: string(e.va.UID), CreateRV: e.va.ResourceVersion}
	}
	return out
}

// KnowsVA reports whether the sources (the ReadWriteOnce index) hold va on its node.
func (m *State) KnowsVA(va *storagev1.VolumeAttachment) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sources.has(va)
}

// Detaching returns the volumes marked detaching, as node|unique name.
func (m *State) Detaching() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	for node, byNode := range m.detaching {
		for u := range byNode {
			out[node+"|"+u] = true
		}
	}
	return out
}

// CheckerDigest is the part of memory the expectation checker reads: the create expectations
// and the delete requests. CheckerHasWork reports whether it is not empty.
func (m *State) CheckerDigest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for name, e := range m.expected.byName {
		lines = append(lines, fmt.Sprintf("exp %s %t %s %s", name, e.stored, e.va.UID, e.va.ResourceVersion))
	}
	for name, r := range m.deletes {
		lines = append(lines, fmt.Sprintf("del %s %s", name, r.uid))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// CheckerHasWork reports whether the expectation checker would judge anything: a stored or
// uncertain create expectation, or a delete request.
func (m *State) CheckerHasWork() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.deletes) > 0 {
		return true
	}
	for _, e := range m.expected.byName {
		if e.stored || e.uncertain {
			return true
		}
	}
	return false
}

// Sizes counts the entries of the per-pod memories, for tests of their bounds.
type Sizes struct {
	// EventNodes and HeldNodes count the nodes with Event memory and with held pairs.
	EventNodes, HeldNodes int
}

// Sizes returns the sizes of the per-pod memories.
func (m *State) Sizes() Sizes {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Sizes{EventNodes: len(m.events), HeldNodes: len(m.held)}
}

// Reserved returns the node holding the reservation of a volume (its unique name), if any.
func (m *State) Reserved(volume string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reservations[volume]
}

// NodesWithVolume returns the nodes with a VolumeAttachment of the volume (its unique name).
func (m *State) NodesWithVolume(volume string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, v := range m.sources.byVolume.Values(volume) {
		seen[v.node] = true
	}
	for _, va := range m.sources.unnamed {
		if migration.VolumeAttachmentIsFor(va, volume) {
			seen[va.Spec.NodeName] = true
		}
	}
	return sortedKeys(seen)
}

// Waiters returns the nodes waiting for a volume (its unique name), sorted.
func (m *State) Waiters(volume string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.waiters[volume]
	if w == nil {
		return nil
	}
	return sortedKeys(w.nodes)
}

// WaitedVolumes counts the volumes some node waits for, for tests of their bound.
func (m *State) WaitedVolumes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}
