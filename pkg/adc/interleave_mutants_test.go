package adc

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// Mutants put back, inside the harness, defects the explorer once found and that were fixed
// in the controller, so that a test can check the explorer still catches them within the
// budget of make test (TestInterleaveBudgetCatches). Production code is left as it is: each
// mutant does, at the point where the defective controller did it, what the defect did.

type mutant string

const (
	// mutantSeenNoSources (defect 1): the expectation checker ends the create expectation of
	// an object the store holds without putting it in vaSources first, so until the handler
	// runs the object is in neither, and a second node can get its ReadWriteOnce volume.
	mutantSeenNoSources mutant = "seen-no-sources"
	// mutantReadOutsideLock (defect 5): a worker reads a node's VolumeAttachments from the
	// store, and the controller's expectations only later, under the lock; an object that
	// moves from the expectations to the store in between is in neither read. The worker
	// reads the store when it starts and parks; once it goes on, its store read under the
	// lock returns what it read then.
	mutantReadOutsideLock mutant = "read-outside-lock"
	// mutantAnyUID (defect 9): the VolumeAttachment handler ends the create expectation of
	// the name on any object under it, whatever its UID (an older incarnation's late event).
	mutantAnyUID mutant = "any-uid"
	// mutantStaleNode (the stale-Node detach fixed before the safety issue, the incident of
	// the API server restart): the read that confirms a detach answers with the informer's
	// copy of the Node, which may be behind the kubelet's volumesInUse, instead of reading
	// the API server.
	mutantStaleNode mutant = "stale-node"
	// mutantPVKey (issue 41): memory tells apart the PersistentVolumes of one disk, as it did
	// when it keyed a volume by its PersistentVolume's name (pv:<name>) instead of its unique
	// volume name. The reconcile keys a pair's volume (its reservation, create expectation
	// and waiters) pv:<name> for every PersistentVolume of a disk but the first the world
	// lists, which keeps the unique name: a world of one PersistentVolume per disk runs as
	// fixed, while two PersistentVolumes of one disk, or a PersistentVolume re-created while
	// the old one's VolumeAttachment is still there, are two volumes to the ReadWriteOnce
	// check and the disk is attached to two nodes. Only an invariant that judges by disk, not
	// by PersistentVolume, sees it.
	mutantPVKey mutant = "pv-key"
)

// mutantSpec is what a mutant must break, and the world whose schedules show it first (the
// self-test explores that world's budget first).
type mutantSpec struct {
	invariant, world string
}

// mutants are the known mutants.
var mutants = map[mutant]mutantSpec{
	mutantSeenNoSources:   {invRWO, "rwo"},
	mutantReadOutsideLock: {invRedundant, "rwo"},
	// Only the recreate world has an older object under a name the controller creates again.
	mutantAnyUID: {invExpectation, "recreate"},
	// The recreate world's new pod makes its kubelet report the volume in use while the
	// controller detaches it.
	mutantStaleNode: {invDetachInUse, "recreate"},
	// Two PersistentVolumes of one disk, a pod on each node; the worlds of one
	// PersistentVolume per disk cannot show it.
	mutantPVKey: {invRWO, "twopv"},
}

// mutantNames lists the mutants in a fixed order.
func mutantNames() []mutant {
	var out []mutant
	for m := range mutants {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func parseMutant(s string) (mutant, error) {
	if _, ok := mutants[mutant(s)]; !ok && s != "" {
		return "", fmt.Errorf("unknown mutant %q (have %v)", s, mutantNames())
	}
	return mutant(s), nil
}

// mutateChecker runs, in the checker thread before expectations.Check, what defect 1 did: an
// expectation whose very object the store holds ends, without the object entering vaSources.
func (h *harness) mutateChecker() {
	if h.cfg.mutant != mutantSeenNoSources {
		return
	}
	exps := memoryExpectations(h.c)
	names := make([]string, 0, len(exps))
	for name := range exps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := exps[name]
		if !e.stored {
			continue
		}
		if obj, ok, _ := h.vas.Indexer.GetByKey(name); ok {
			if va, isVA := cached.VAOf(obj); isVA && va.UID == e.uid && !memoryKnowsVA(h.c, va) {
				// Ended as if gone: the expectation and its reservation, nothing in the sources.
				h.c.mem.Gone(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: e.uid}})
			}
		}
	}
}

// mutateWorkerStart runs, on a new worker's thread before the controller's code, the store
// read of defect 5: the thread reads its node's VolumeAttachments and parks; its next read
// of them (in actual.Read, under memory's lock) returns this one.
func (h *harness) mutateWorkerStart(t *thread) {
	if h.cfg.mutant != mutantReadOutsideLock || h.abandoning {
		return
	}
	objs, _ := h.vas.Indexer.ByIndex(byNodeIndex, t.node)
	sortByKey(objs)
	t.stale = map[string][]interface{}{t.node: objs}
	h.parkAfterRead(t, t.node, objs, " outside the lock")
}

// staleRead returns, for defect 5, what the current thread read outside the lock.
func (h *harness) staleRead(node string) ([]interface{}, bool) {
	t := h.current
	if t == nil || t.stale == nil {
		return nil, false
	}
	objs, ok := t.stale[node]
	delete(t.stale, node)
	return objs, ok
}

// mutateDelivered runs, after the VolumeAttachment handler got n, what defect 9 did: once the
// create returned, any object under its name ends the expectation, whatever its UID.
func (h *harness) mutateDelivered(n notification) {
	if h.cfg.mutant != mutantAnyUID || (n.typ != watch.Added && n.typ != watch.Modified) {
		return
	}
	name, _ := uidOfNote(n)
	if name == "" {
		return
	}
	if e, ok := memoryExpectations(h.c)[name]; ok && e.stored {
		// Ended by a tombstone-like delete that names no UID: whatever object is expected.
		h.c.mem.Gone(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
}

// mutateNodeRead answers, for the stale-Node mutant, the controller's fresh read of a Node
// with the copy its informer store holds.
func (h *harness) mutateNodeRead(name string) (*v1.Node, bool) {
	if h.cfg.mutant != mutantStaleNode {
		return nil, false
	}
	obj, ok, _ := h.informers[resNodes].store.GetByKey(name)
	if !ok {
		return nil, false
	}
	n, isNode := obj.(*v1.Node)
	if !isNode {
		return nil, false
	}
	return n.DeepCopy(), true
}

// pvKeyVolume is, for the pv-key mutant in world w, the key of a pair's volume in memory:
// pv:<PersistentVolume name> for a PersistentVolume of a disk other than the disk's first
// (the in-tree name, which finds in-tree attachments, stays), the unique name otherwise.
func pvKeyVolume(w *worldSpec, id actual.Identity) attachstate.Volume {
	for _, v := range w.volumes {
		if v.pv == id.PVName {
			if w.pvsOf(w.uniqueName(v.pv))[0] == id.PVName {
				return id.Key()
			}
			return attachstate.Volume{Name: "pv:" + id.PVName, InTreeName: id.InTreeName}
		}
	}
	return id.Key()
}

// mutateInstall puts, when the schedule starts, a mutant that replaces a function of the
// controller in place; the returned func, run when the schedule ends, puts it back.
func (h *harness) mutateInstall() (restore func()) {
	if h.cfg.mutant == mutantPVKey {
		// The pv-key mutant keys memory's reservations, create expectations and waiters
		// through reconcile.go's memoryVolume seam. Schedules run one at a time and a
		// schedule's threads have all ended when it closes, so the package variable is never
		// read and written at once.
		w := h.w
		prev := memoryVolume
		memoryVolume = func(id actual.Identity) attachstate.Volume { return pvKeyVolume(w, id) }
		return func() { memoryVolume = prev }
	}
	return func() {}
}
