package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// churn moves pods around the chaos claims as users and controllers do: it deletes a claim's
// pod (grace period 0: no kubelet runs the containers) and later creates a new one, mostly
// on another node. A claim has at most one pod that may exist at any time, so a
// ReadWriteOnce volume is wanted on one node at a time.
type churn struct {
	client    kubernetes.Interface
	namespace string
	claims    int
	fleet     *fleet

	mu      sync.Mutex
	rnd     *rand.Rand
	pods    map[int]placed // claim -> the pod that may exist
	last    map[int]string // claim -> the node of its previous pod
	gen     int
	created atomic.Int64
	deleted atomic.Int64
}

// placed is a pod the churn created and has not seen deleted.
type placed struct{ name, node string }

func newChurn(client kubernetes.Interface, namespace string, claims int, fl *fleet, seed uint64) *churn {
	return &churn{client: client, namespace: namespace, claims: claims, fleet: fl,
		rnd: rand.New(rand.NewPCG(seed, 0x63687572)), pods: map[int]placed{}, last: map[int]string{}}
}

// Populate gives a fraction of the claims a pod.
func (c *churn) Populate(ctx context.Context, fraction float64) {
	for i := 0; i < c.claims; i++ {
		if c.float() < fraction {
			c.create(ctx, i)
		}
	}
}

// Run makes one change every interval until ctx ends.
func (c *churn) Run(ctx context.Context, interval time.Duration) {
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(ctx context.Context) (bool, error) {
		c.mu.Lock()
		claim := c.rnd.IntN(c.claims)
		_, has := c.pods[claim]
		c.mu.Unlock()
		if has {
			c.remove(ctx, claim)
		} else {
			c.create(ctx, claim)
		}
		return false, nil
	})
}

// Burst churns at 25 changes per second for d, run right after the API server comes back:
// while adc's informers relist one after another, pods come and go and volumes are mounted
// and unmounted, which is when decisions on a stale cache would detach what is in use.
func (c *churn) Burst(ctx context.Context, d time.Duration) {
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	c.Run(bctx, 40*time.Millisecond)
}

// Evict deletes every pod on node, as a user or the taint manager does for a dead node; the
// claims get new pods on other nodes later.
func (c *churn) Evict(ctx context.Context, node string) int {
	c.mu.Lock()
	var claims []int
	for claim, p := range c.pods {
		if p.node == node {
			claims = append(claims, claim)
		}
	}
	c.mu.Unlock()
	for _, claim := range claims {
		c.remove(ctx, claim)
	}
	return len(claims)
}

// Stats returns how many pods the churn created and deleted.
func (c *churn) Stats() (created, deleted int64) { return c.created.Load(), c.deleted.Load() }

func (c *churn) float() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rnd.Float64()
}

func (c *churn) create(ctx context.Context, claim int) {
	nodes := c.fleet.Schedulable()
	c.mu.Lock()
	if _, has := c.pods[claim]; has || len(nodes) == 0 {
		c.mu.Unlock()
		return
	}
	node := nodes[c.rnd.IntN(len(nodes))]
	if node == c.last[claim] && len(nodes) > 1 && c.rnd.IntN(4) > 0 {
		node = nodes[(c.rnd.IntN(len(nodes)-1)+1+indexOf(nodes, node))%len(nodes)]
	}
	c.gen++
	p := placed{name: fmt.Sprintf("p-%03d-%d", claim, c.gen), node: node}
	// Recorded before the create: a create that fails on a dying API server may still have
	// happened, and the pod must then be deleted before the claim gets another one.
	c.pods[claim] = p
	c.last[claim] = node
	c.mu.Unlock()
	_, err := c.client.CoreV1().Pods(c.namespace).Create(ctx, podFor(p.name, c.namespace, node, fmt.Sprintf("c-%03d", claim)), metav1.CreateOptions{})
	if err == nil {
		c.created.Add(1)
		return
	}
	klog.FromContext(ctx).V(2).Info("Chaos churn: pod create failed; will delete it to be sure", "pod", p.name, "err", err)
}

func (c *churn) remove(ctx context.Context, claim int) {
	c.mu.Lock()
	p, has := c.pods[claim]
	c.mu.Unlock()
	if !has {
		return
	}
	err := c.client.CoreV1().Pods(c.namespace).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Chaos churn: pod delete failed; will retry", "pod", p.name, "err", err)
		return
	}
	if err == nil {
		c.deleted.Add(1)
	}
	c.mu.Lock()
	if c.pods[claim] == p {
		delete(c.pods, claim)
	}
	c.mu.Unlock()
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
