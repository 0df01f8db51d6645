package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// churn moves pods around the chaos volumes as users and controllers do: it deletes a
// volume's pod (grace period 0: no kubelet runs the containers) and later creates a new one,
// mostly on another node. A volume has at most one pod that may exist at any time, so a
// ReadWriteOnce volume is wanted on one node at a time.
//
// The volumes are slots: the first claims are PersistentVolumeClaims c-<i> bound to
// PersistentVolumes v-<i>; the next inline are inline gcePersistentDisk volumes (disk
// chaos-disk-<i>), which adc attaches through pd.csi.storage.gke.io with a VolumeAttachment
// that carries the translated spec in spec.source.inlineVolumeSpec. Now and then, instead of
// deleting a pod, the churn deletes the PersistentVolume of its claim (one of the last
// chaosPVLess, of spareDriver) while its VolumeAttachment exists (a PV-less
// VolumeAttachment), and creates it again once the claim has no pod.
//
// Every choice comes from seeded streams: the steady churn has one, each burst its own
// (seed, burst number), so the choices do not depend on how the two interleave.
//
// A delete of a scheduled pod with grace period 0 is two writes in the API server (set
// deletionTimestamp, then delete): one cut between them (an API server restart, a client
// giving up) leaves the pod deleting, and nothing else in this cluster would finish it while
// its node's kubelet is down or gone. So the churn sends its API calls with the caller's
// context (a burst ends between steps, never inside one), and keeps the pods whose delete
// failed pending: every step sends their deletes again, and RestoreAll drains them before the
// run settles.
type churn struct {
	client    kubernetes.Interface
	namespace string
	claims    int
	inline    int
	fleet     *fleet
	seed      uint64

	mu     sync.Mutex
	rnd    *rand.Rand
	bursts uint64
	pods   map[int]placed // slot -> the pod that may exist
	undone map[int]placed // slot -> its pod whose delete failed (still in pods), sent again every step
	last   map[int]string // slot -> the node of its previous pod
	pvGone map[int]bool   // claim slots whose PersistentVolume the churn deleted
	gen    int

	created, deleted       atomic.Int64
	pvDeleted, pvRecreated atomic.Int64
	createErrs, deleteErrs atomic.Int64
}

// maxPVGone bounds how many PersistentVolumes are deleted at once.
const maxPVGone = 4

// placed is a pod the churn created and has not seen deleted.
type placed struct{ name, node string }

func newChurn(client kubernetes.Interface, namespace string, claims, inline int, fl *fleet, seed uint64) *churn {
	return &churn{client: client, namespace: namespace, claims: claims, inline: inline, fleet: fl, seed: seed,
		rnd: rand.New(rand.NewPCG(seed, 0x63687572)), pods: map[int]placed{}, undone: map[int]placed{}, last: map[int]string{}, pvGone: map[int]bool{}}
}

// Populate gives a fraction of the volumes a pod.
func (c *churn) Populate(ctx context.Context, fraction float64) {
	for i := 0; i < c.claims+c.inline; i++ {
		c.mu.Lock()
		f := c.rnd.Float64()
		c.mu.Unlock()
		if f < fraction {
			c.create(ctx, c.rnd, i)
		}
	}
}

// Run makes one change every interval until ctx ends, with the steady churn's stream.
func (c *churn) Run(ctx context.Context, interval time.Duration) { c.run(ctx, ctx, interval, c.rnd) }

// run makes one change every interval until stop ends, checked between steps; the steps' API
// calls use ctx, so stopping does not cut one in the middle.
func (c *churn) run(stop, ctx context.Context, interval time.Duration, rnd *rand.Rand) {
	_ = wait.PollUntilContextCancel(stop, interval, false, func(context.Context) (bool, error) {
		c.step(ctx, rnd)
		return false, nil
	})
}

// step is one change: a volume with a pod loses it, or (one of the last chaosPVLess claims,
// one time in 3) loses its PersistentVolume instead; one without a pod gets one, or its PersistentVolume again if it
// is gone (so a PV-less VolumeAttachment is also one no pod uses for a while).
func (c *churn) step(ctx context.Context, rnd *rand.Rand) {
	c.retryDeletes(ctx)
	c.mu.Lock()
	slot := rnd.IntN(c.claims + c.inline)
	_, has := c.pods[slot]
	gone := c.pvGone[slot]
	dropPV := has && slot < c.claims && slot >= c.claims-chaosPVLess && !gone && len(c.pvGone) < maxPVGone && rnd.IntN(3) == 0
	c.mu.Unlock()
	switch {
	case dropPV:
		c.deletePV(ctx, slot)
	case has:
		c.remove(ctx, slot)
	case gone:
		c.recreatePV(ctx, slot)
	default:
		c.create(ctx, rnd, slot)
	}
}

// Burst churns at 25 changes per second for d, run right after the API server comes back:
// while adc's informers relist one after another, pods come and go and volumes are mounted
// and unmounted, which is when decisions on a stale cache would detach what is in use.
func (c *churn) Burst(ctx context.Context, d time.Duration) {
	c.mu.Lock()
	c.bursts++
	rnd := rand.New(rand.NewPCG(c.seed, 0x6275727374_00+c.bursts))
	c.mu.Unlock()
	// The deadline only stops the steps: a delete cut by it would leave a pod deleting.
	stop, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	c.run(stop, ctx, 40*time.Millisecond, rnd)
}

// Evict deletes every pod on node, in slot order, as a user or the taint manager does for a
// dead node; the volumes get new pods on other nodes later.
func (c *churn) Evict(ctx context.Context, node string) int {
	c.mu.Lock()
	var slots []int
	for slot, p := range c.pods {
		if p.node == node {
			slots = append(slots, slot)
		}
	}
	c.mu.Unlock()
	slices.Sort(slots)
	for _, slot := range slots {
		c.remove(ctx, slot)
	}
	return len(slots)
}

// Stats returns how many pods the churn created and deleted, and how many PersistentVolumes
// it deleted and created again.
func (c *churn) Stats() (created, deleted, pvDeleted, pvRecreated int64) {
	return c.created.Load(), c.deleted.Load(), c.pvDeleted.Load(), c.pvRecreated.Load()
}

func (c *churn) create(ctx context.Context, rnd *rand.Rand, slot int) {
	nodes := c.fleet.Schedulable()
	c.mu.Lock()
	if _, has := c.pods[slot]; has || len(nodes) == 0 || c.pvGone[slot] {
		c.mu.Unlock()
		return
	}
	node := nodes[rnd.IntN(len(nodes))]
	if node == c.last[slot] && len(nodes) > 1 && rnd.IntN(4) > 0 {
		node = nodes[(rnd.IntN(len(nodes)-1)+1+indexOf(nodes, node))%len(nodes)]
	}
	c.gen++
	p := placed{name: fmt.Sprintf("p-%03d-%d", slot, c.gen), node: node}
	// Recorded before the create: a create that fails on a dying API server may still have
	// happened, and the pod must then be deleted before the volume gets another one.
	c.pods[slot] = p
	c.last[slot] = node
	c.mu.Unlock()
	_, err := c.client.CoreV1().Pods(c.namespace).Create(ctx, c.podFor(p.name, node, slot), metav1.CreateOptions{})
	if err == nil {
		c.created.Add(1)
		return
	}
	c.createErrs.Add(1)
	klog.FromContext(ctx).V(2).Info("Chaos churn: pod create failed; will delete it to be sure", "pod", p.name, "err", err)
}

// podFor is the pod of slot: a claim's or an inline disk's.
func (c *churn) podFor(name, node string, slot int) *v1.Pod {
	if slot < c.claims {
		return podFor(name, c.namespace, node, fmt.Sprintf("c-%03d", slot))
	}
	return inlinePodFor(name, c.namespace, node, inlineDisk(slot-c.claims))
}

// remove deletes the pod of slot. A delete that fails (and may have been cut half done,
// leaving the pod deleting) keeps the slot's pod, and the pod pending: every step and
// RestoreAll send its delete again until the API server says it is gone.
func (c *churn) remove(ctx context.Context, slot int) {
	c.mu.Lock()
	p, has := c.pods[slot]
	_, retry := c.undone[slot]
	c.mu.Unlock()
	if !has {
		return
	}
	err := c.client.CoreV1().Pods(c.namespace).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		c.deleteErrs.Add(1)
		v := 2
		if retry {
			v = 4 // the first failure was logged
		}
		klog.FromContext(ctx).V(v).Info("Chaos churn: pod delete failed; will retry", "pod", p.name, "err", err)
		c.mu.Lock()
		if c.pods[slot] == p {
			c.undone[slot] = p
		}
		c.mu.Unlock()
		return
	}
	if err == nil {
		c.deleted.Add(1)
	}
	c.mu.Lock()
	if c.pods[slot] == p {
		delete(c.pods, slot)
	}
	if c.undone[slot] == p {
		delete(c.undone, slot)
	}
	c.mu.Unlock()
}

// retryDeletes sends again, in slot order, the deletes that failed.
func (c *churn) retryDeletes(ctx context.Context) {
	for _, slot := range c.undoneSlots() {
		c.remove(ctx, slot)
	}
}

func (c *churn) undoneSlots() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	slots := make([]int, 0, len(c.undone))
	for slot := range c.undone {
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	return slots
}

// FinishDeletes sends the deletes that failed again until every one is done, for the end of
// the run: a pod left deleting wants no volumes, but stays if its node's kubelet is down or
// gone.
func (c *churn) FinishDeletes(ctx context.Context) error {
	var left []int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c.retryDeletes(ctx)
		left = c.undoneSlots()
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("pod deletes of slots %v not done: %w", left, err)
	}
	return nil
}

// deletePV deletes the PersistentVolume of claim slot while its pod (and so, mostly, its
// VolumeAttachment) exists, and removes the pv-protection finalizer as someone forcing it
// does: the VolumeAttachment then names a PersistentVolume that is gone.
func (c *churn) deletePV(ctx context.Context, slot int) {
	name := volumePV(slot).Name
	pvs := c.client.CoreV1().PersistentVolumes()
	if err := pvs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Chaos churn: PersistentVolume delete failed", "pv", name, "err", err)
		return
	}
	c.mu.Lock()
	c.pvGone[slot] = true
	c.mu.Unlock()
	c.pvDeleted.Add(1)
	if _, err := pvs.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Chaos churn: removing the PersistentVolume's finalizers failed; retried when it is created again", "pv", name, "err", err)
	}
}

// recreatePV creates the PersistentVolume of claim slot again, bound to its claim, once the
// old one is gone.
func (c *churn) recreatePV(ctx context.Context, slot int) {
	if err := c.restorePV(ctx, slot); err != nil {
		klog.FromContext(ctx).V(2).Info("Chaos churn: PersistentVolume not created again yet", "slot", slot, "err", err)
		return
	}
	c.mu.Lock()
	delete(c.pvGone, slot)
	c.mu.Unlock()
	c.pvRecreated.Add(1)
}

func (c *churn) restorePV(ctx context.Context, slot int) error {
	pv := volumePV(slot)
	pvs := c.client.CoreV1().PersistentVolumes()
	if old, err := pvs.Get(ctx, pv.Name, metav1.GetOptions{}); err == nil {
		if old.DeletionTimestamp == nil {
			return nil // created again already (a create whose answer was lost)
		}
		if _, err := pvs.Patch(ctx, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("removing the finalizers of PersistentVolume %s: %w", pv.Name, err)
		}
		return fmt.Errorf("PersistentVolume %s is still being deleted", pv.Name)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading PersistentVolume %s: %w", pv.Name, err)
	}
	claim, err := c.client.CoreV1().PersistentVolumeClaims(c.namespace).Get(ctx, fmt.Sprintf("c-%03d", slot), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the claim of PersistentVolume %s: %w", pv.Name, err)
	}
	pv.Spec.Capacity = claim.Spec.Resources.Requests
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PersistentVolume %s again: %w", pv.Name, err)
	}
	return nil
}

// RestoreAll finishes the pod deletes that failed (FinishDeletes) and creates every deleted
// PersistentVolume again, for the end of the run: a pod whose PersistentVolume is gone cannot
// be attached, and convergence wants every pod's volumes attached.
func (c *churn) RestoreAll(ctx context.Context) error {
	deletesErr := c.FinishDeletes(ctx)
	c.mu.Lock()
	var slots []int
	for slot := range c.pvGone {
		slots = append(slots, slot)
	}
	c.mu.Unlock()
	slices.Sort(slots)
	for _, slot := range slots {
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			last = c.restorePV(ctx, slot)
			return last == nil, nil
		}); err != nil {
			return errors.Join(deletesErr, fmt.Errorf("creating PersistentVolume %s again: %w (last error: %w)", volumePV(slot).Name, err, last))
		}
		c.mu.Lock()
		delete(c.pvGone, slot)
		c.mu.Unlock()
		c.pvRecreated.Add(1)
	}
	return deletesErr
}

// Placed returns how many pods the churn has on node.
func (c *churn) Placed(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.pods {
		if p.node == node {
			n++
		}
	}
	return n
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return 0
}
