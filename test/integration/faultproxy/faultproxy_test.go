package faultproxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/migration-aware/adc/test/integration/framework"
)

// A frozen node watch hides a node change while pods keep flowing; Heal delivers it without
// a relist: the informer's watch resumes where it was held.
func TestFreezeHidesNodeChangesWhilePodsFlow(t *testing.T) {
	h := newHarness(t)
	h.createNode(t, "fp-freeze")
	h.labelNode(t, "fp-freeze", "before")
	h.waitPhase(t, "fp-freeze", "before", 10*time.Second)

	h.proxy.ResetCounts()
	h.proxy.Freeze("nodes")
	h.labelNode(t, "fp-freeze", "after")
	h.createPod(t, "fp-freeze-pod")
	framework.Eventually(t.Context(), t, "pod in the pod informer", 5*time.Second, func(context.Context) (bool, string) {
		return h.podCached("fp-freeze-pod"), "not cached"
	})
	never(t, "the frozen node informer saw the label change", 2*time.Second, func() bool {
		return h.cachedPhase("fp-freeze") != "before"
	})

	h.proxy.Heal("nodes")
	h.waitPhase(t, "fp-freeze", "after", 10*time.Second)
	if n := relists(h.proxy, "nodes"); n != 0 {
		t.Errorf("node informer relisted %d times after a freeze; want its watch resumed: %v", n, requestsOf(h.proxy, "nodes"))
	}
}

// Freeze then Expire: the informer's watch is closed with the held events dropped, its
// resuming watch is refused with 410, its relist waits for Heal and then replaces the
// store, so a node created and deleted meanwhile never shows up.
func TestExpireMakesTheInformerRelist(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"fp-expire-keep", "fp-expire-gone"} {
		h.createNode(t, n)
		h.labelNode(t, n, "before")
		h.waitPhase(t, n, "before", 10*time.Second)
	}

	h.proxy.ResetCounts()
	h.proxy.Freeze("nodes")
	h.createNode(t, "fp-expire-ghost")
	h.deleteNode(t, "fp-expire-ghost")
	h.deleteNode(t, "fp-expire-gone")
	h.labelNode(t, "fp-expire-keep", "after")
	h.createNode(t, "fp-expire-new")
	h.labelNode(t, "fp-expire-new", "new")
	h.proxy.Expire("nodes")
	framework.Eventually(t.Context(), t, "the node informer relisting", 10*time.Second, func(context.Context) (bool, string) {
		return relists(h.proxy, "nodes") > 0, "no list or streaming list yet"
	})
	never(t, "the node informer saw a change before Heal", 500*time.Millisecond, func() bool {
		return h.cachedPhase("fp-expire-keep") != "before" || h.cachedPhase("fp-expire-gone") != "before" ||
			h.cachedPhase("fp-expire-new") != "absent"
	})

	h.proxy.Heal("nodes")
	h.waitPhase(t, "fp-expire-keep", "after", 10*time.Second)
	h.waitPhase(t, "fp-expire-gone", "absent", 10*time.Second)
	h.waitPhase(t, "fp-expire-new", "new", 10*time.Second)
	if h.everAdded("fp-expire-ghost") {
		t.Error("the node created and deleted while the informer was expired reached it")
	}
	t.Logf("node requests after Freeze+Expire: %v", requestsOf(h.proxy, "nodes"))

	// Expire alone: the informer relists at once.
	before := relists(h.proxy, "nodes")
	h.proxy.Expire("nodes")
	h.labelNode(t, "fp-expire-keep", "again")
	h.waitPhase(t, "fp-expire-keep", "again", 10*time.Second)
	framework.Eventually(t.Context(), t, "the node informer relisting", 10*time.Second, func(context.Context) (bool, string) {
		return relists(h.proxy, "nodes") > before, "no new list or streaming list"
	})
	h.proxy.Heal("nodes")
}

// Cut refuses every list and watch of nodes; the informer backs off and recovers on Heal.
func TestCutAndHealRecovers(t *testing.T) {
	h := newHarness(t)
	h.createNode(t, "fp-cut")
	h.labelNode(t, "fp-cut", "before")
	h.waitPhase(t, "fp-cut", "before", 10*time.Second)

	h.proxy.ResetCounts()
	h.proxy.Cut("nodes")
	h.labelNode(t, "fp-cut", "after")
	framework.Eventually(t.Context(), t, "the node informer retrying", 10*time.Second, func(context.Context) (bool, string) {
		return h.proxy.Count("watch", "nodes")+h.proxy.Count("list", "nodes") > 0, "no node list or watch yet"
	})
	never(t, "the cut node informer saw the change", 500*time.Millisecond, func() bool {
		return h.cachedPhase("fp-cut") != "before"
	})

	healed := time.Now()
	h.proxy.Heal("nodes")
	h.waitPhase(t, "fp-cut", "after", 20*time.Second)
	t.Logf("node informer recovered %s after Heal; node requests: %v", time.Since(healed).Round(time.Millisecond), requestsOf(h.proxy, "nodes"))
}

// Delay makes the node informer lag a known time behind the pod informer: the production
// failure where Node watches came back seconds after Pods.
func TestDelayMakesNodesLagBehindPods(t *testing.T) {
	h := newHarness(t)
	h.createNode(t, "fp-delay")
	h.labelNode(t, "fp-delay", "before")
	h.waitPhase(t, "fp-delay", "before", 10*time.Second)

	const lag = 1500 * time.Millisecond
	h.proxy.Delay("nodes", lag)
	start := time.Now()
	h.labelNode(t, "fp-delay", "after")
	h.createPod(t, "fp-delay-pod")
	// The order of events: the pod, created after the node change, is in adc's cache while
	// the node change is not yet; then the node change arrives. (The lag is logged, not
	// asserted.)
	var order []string
	var podSeen, nodeSeen time.Duration
	framework.Eventually(t.Context(), t, "the pod and the node change cached", 10*time.Second, func(context.Context) (bool, string) {
		pod, node := h.podCached("fp-delay-pod"), h.cachedPhase("fp-delay") == "after"
		switch {
		case podSeen == 0 && pod && !node:
			podSeen = time.Since(start)
			order = append(order, "pod")
		case podSeen == 0 && pod:
			podSeen = time.Since(start)
			order = append(order, "pod with the node change")
		}
		if nodeSeen == 0 && node {
			nodeSeen = time.Since(start)
			order = append(order, "node change")
		}
		return podSeen > 0 && nodeSeen > 0, fmt.Sprintf("seen so far: %v", order)
	})
	t.Logf("pod cached after %s, node change after %s (delay %s)", podSeen.Round(time.Millisecond), nodeSeen.Round(time.Millisecond), lag)
	if len(order) != 2 || order[0] != "pod" || order[1] != "node change" {
		t.Errorf("cached in the order %v, want the pod first, then (later) the delayed node change", order)
	}

	h.proxy.Heal("nodes")
	h.labelNode(t, "fp-delay", "healed")
	h.waitPhase(t, "fp-delay", "healed", 5*time.Second)
}
