package chaos

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// fleet is the set of nodes of a chaos run and which of them may get new pods: a node under
// a fault (NotReady, out of service) takes none, a deleted one is gone.
type fleet struct {
	mu      sync.Mutex
	nodes   []string
	faulty  map[string]bool
	deleted map[string]bool
}

func newFleet(nodes []string) *fleet {
	return &fleet{nodes: append([]string(nil), nodes...), faulty: map[string]bool{}, deleted: map[string]bool{}}
}

// Schedulable returns the nodes that may get new pods.
func (f *fleet) Schedulable() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range f.nodes {
		if !f.faulty[n] && !f.deleted[n] {
			out = append(out, n)
		}
	}
	return out
}

// Pick marks a random healthy node faulty and returns it ("" when at most keep are healthy).
func (f *fleet) Pick(rnd *rand.Rand, keep int) string {
	healthy := f.Schedulable()
	if len(healthy) <= keep {
		return ""
	}
	n := healthy[rnd.IntN(len(healthy))]
	f.mu.Lock()
	f.faulty[n] = true
	f.mu.Unlock()
	return n
}

// Heal makes a faulty node schedulable again.
func (f *fleet) Heal(n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.faulty, n)
}

// Delete removes a node for good.
func (f *fleet) Delete(n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted[n] = true
	delete(f.faulty, n)
}

// Add adds a new healthy node.
func (f *fleet) Add(n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.nodes, n) {
		f.nodes = append(f.nodes, n)
	}
}
