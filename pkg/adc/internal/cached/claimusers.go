package cached

import (
	"slices"
	"sync"

	"github.com/migration-aware/adc/pkg/adc/internal/multimap"
)

// ClaimRef names a claim by namespace and name. Its strings are the pod's own (the pod's
// namespace and its volume's claim name), so indexing a claim allocates no key.
type ClaimRef struct{ Namespace, Name string }

// ClaimUsers finds the pods that use a claim, so that a claim or PersistentVolume change
// re-decides their nodes. It replaces a client-go index on the pod informer, which kept a
// one-element set per claim (~250 bytes with its key, ~2.5 MB at 10,000 volumes); here a claim
// used by one pod costs a map slot holding the pod's name.
//
// The pod event handler maintains it, so it can trail the pod cache by the handler's delay.
// That loses nothing: the handler that adds a pod here has enqueued the pod's node, and that
// node's sync reads the claim and volume caches afterwards, so a claim change missed here was
// already seen there. Workers start once the handler has seen every pod listed at start-up.
// Inside kube-controller-manager it also adds no index to the host's shared pod informer.
type ClaimUsers struct {
	mu sync.RWMutex
	// pods holds, per claim, the names of the pods in its namespace that use it.
	pods multimap.Map[ClaimRef, string]
}

// NewClaimUsers returns an empty index.
func NewClaimUsers() *ClaimUsers { return &ClaimUsers{pods: multimap.New[ClaimRef, string]()} }

// Update replaces what old said (nil for an added pod) with what cur says (nil for a
// deleted pod). Pod volumes are immutable, so an update normally changes nothing here.
func (u *ClaimUsers) Update(old, cur interface{}) {
	oldName, oldClaims := podClaimRefs(old)
	curName, curClaims := podClaimRefs(cur)
	if oldName == curName && slices.Equal(oldClaims, curClaims) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, ref := range oldClaims {
		u.pods.Remove(ref, oldName)
	}
	for _, ref := range curClaims {
		u.pods.Add(ref, curName)
	}
}

// PodKeys returns the cache keys (namespace/name) of the pods that use the claim.
func (u *ClaimUsers) PodKeys(ref ClaimRef) []string {
	u.mu.RLock()
	defer u.mu.RUnlock()
	names := u.pods.Values(ref)
	for i, n := range names {
		names[i] = ref.Namespace + "/" + n
	}
	return names
}

// podClaimRefs returns a pod's name and the claims it uses (its persistentVolumeClaim
// volumes and the claims of its generic ephemeral volumes, named <pod>-<volume>), from
// either pod form; nothing for anything else.
func podClaimRefs(obj interface{}) (string, []ClaimRef) {
	namespace, name, claims, ok := PodClaims(obj)
	if !ok {
		return "", nil
	}
	refs := make([]ClaimRef, len(claims))
	for i, claim := range claims {
		refs[i] = ClaimRef{namespace, claim}
	}
	return name, refs
}
