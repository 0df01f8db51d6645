package adc

import (
	"sort"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The interleaving explorer reads the controller's memory only through package attachstate's
// read operations, here.

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
	exps := c.mem.Expectations()
	out := make(map[string]memExpectation, len(exps))
	for name, e := range exps {
		out[name] = memExpectation{name: name, node: e.Node, stored: e.Stored, uid: types.UID(e.UID), createRV: e.CreateRV}
	}
	return out
}

// memoryKnowsVA reports whether the controller's ReadWriteOnce index (filled by the
// VolumeAttachment handler) holds va on its node.
func memoryKnowsVA(c *Controller, va *storagev1.VolumeAttachment) bool { return c.mem.KnowsVA(va) }

// memoryDetaching returns the volumes the controller has marked detaching (to be dropped
// from node status before their detach), as node|unique name.
func memoryDetaching(c *Controller) map[string]bool { return c.mem.Detaching() }

// memoryCheckerHasWork reports whether the expectation checker would look at anything: a stored
// or uncertain create expectation, or a delete request. When it has none it returns at once,
// so the explorer does not offer it as a step.
func memoryCheckerHasWork(c *Controller) bool { return c.mem.CheckerHasWork() }

// memoryHasUncertain reports whether a create whose answer was lost waits for the checker's
// read (expectcheck's checkUncertain).
func memoryHasUncertain(c *Controller) bool {
	for _, e := range c.mem.Expectations() {
		if e.Uncertain && !e.Stored {
			return true
		}
	}
	return false
}

// memoryCheckerDigest is the part of the memory the expectation checker reads.
func memoryCheckerDigest(c *Controller) string { return c.mem.CheckerDigest() }

// memoryDigest is a canonical text of everything the controller remembers that can change a
// later decision: memory's digest, the operations under way and the pair snapshot. The
// explorer hashes it into its state key (two schedules that reach the same world and the
// same memory behave the same from there on) and prints it in traces.
func memoryDigest(c *Controller) string {
	lines := []string{c.mem.Digest()}
	for _, name := range c.ops.Names() {
		lines = append(lines, "op "+name)
	}
	// The pair snapshot decides whether an attached VolumeAttachment needs a reconcile
	// (markAttached); read through the public Snapshot.
	var pairs []string
	for _, s := range c.Snapshot() {
		pairs = append(pairs, "pair "+s.Node+" "+s.Pod+" "+s.Volume+" "+s.VolumeAttachment+" "+string(s.Phase))
	}
	sort.Strings(pairs)
	return strings.Join(append(lines, pairs...), "\n") + "\n"
}

// memoryLeftovers lists what the controller still remembers once the world has quiesced with
// every pod deleted and every VolumeAttachment gone (attachstate.Leftovers, and the operations
// under way).
func memoryLeftovers(c *Controller, liveNodes map[string]bool) []string {
	out := c.mem.Leftovers(liveNodes)
	if ops := c.ops.Names(); len(ops) > 0 {
		out = append(out, "operations under way: "+strings.Join(ops, " "))
	}
	return out
}
