// Package faultproxy checks test/faultproxy against a real kube-apiserver: client-go
// informers speaking protobuf, as adc's do, must see exactly the stale or healed views the
// faults promise, so controller tests built on them replay API server restarts faithfully.
package faultproxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/test/faultproxy"
	"github.com/migration-aware/adc/test/integration/framework"
)

// harness is one proxy in front of the control plane, node and pod informers through it
// and an admin client that goes straight to the API server, for writes.
type harness struct {
	proxy *faultproxy.Proxy
	admin kubernetes.Interface
	ns    string
	nodes cache.SharedIndexInformer
	pods  cache.SharedIndexInformer

	mu    sync.Mutex
	added map[string]bool // every node name the node informer ever delivered as added
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	cp := framework.Get(t)
	ctx := t.Context()
	p, err := faultproxy.New(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.Context(): it ends before cleanups run, and the proxy must outlive the informers
	// so they do not log its closing as a failed watch.
	proxyCtx, stopProxy := context.WithCancel(context.Background())
	if err := p.Start(proxyCtx); err != nil {
		stopProxy()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopProxy()
		if err := p.Close(); err != nil {
			t.Errorf("closing the proxy: %v", err)
		}
	})

	// The way adc talks to the API server: protobuf, JSON accepted as a fallback.
	cfg := p.Config()
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faultproxy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})

	h := &harness{proxy: p, admin: cp.Client, ns: ns.Name, added: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(client, 0)
	h.nodes = factory.Core().V1().Nodes().Informer()
	h.pods = factory.Core().V1().Pods().Informer()
	if _, err := h.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if n, ok := obj.(*v1.Node); ok {
			h.mu.Lock()
			h.added[n.Name] = true
			h.mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { // before the proxy closes
		close(stop)
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), h.nodes.HasSynced, h.pods.HasSynced) {
		t.Fatal("informers did not sync through the proxy")
	}
	return h
}

// createNode creates a node directly (not through the proxy) and deletes it after the test.
func (h *harness) createNode(t *testing.T, name string) {
	t.Helper()
	if _, err := h.admin.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = h.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func (h *harness) deleteNode(t *testing.T, name string) {
	t.Helper()
	if err := h.admin.CoreV1().Nodes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node %s: %v", name, err)
	}
}

// labelNode sets the label "phase" on a node directly.
func (h *harness) labelNode(t *testing.T, name, phase string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"phase":%q}}}`, phase)
	if _, err := h.admin.CoreV1().Nodes().Patch(t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling node %s: %v", name, err)
	}
}

func (h *harness) createPod(t *testing.T, name string) {
	t.Helper()
	_, err := h.admin.CoreV1().Pods(h.ns).Create(t.Context(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// cachedPhase is the node's "phase" label in the node informer's store, or "absent".
func (h *harness) cachedPhase(name string) string {
	obj, ok, err := h.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return "absent"
	}
	return obj.(*v1.Node).Labels["phase"]
}

func (h *harness) podCached(name string) bool {
	_, ok, _ := h.pods.GetStore().GetByKey(h.ns + "/" + name)
	return ok
}

func (h *harness) everAdded(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.added[name]
}

// waitPhase waits until the node informer shows the node with that phase ("absent": gone).
func (h *harness) waitPhase(t *testing.T, name, phase string, timeout time.Duration) {
	t.Helper()
	framework.Eventually(t.Context(), t, "node "+name+" cached as "+phase, timeout, func(context.Context) (bool, string) {
		got := h.cachedPhase(name)
		return got == phase, "phase " + got
	})
}

// never fails when what happens within d: it checks every 25 ms.
func never(t *testing.T, what string, d time.Duration, happened func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 25*time.Millisecond, d, true, func(context.Context) (bool, error) {
		return happened(), nil
	})
	if err == nil {
		t.Fatalf("%s within %s", what, d)
	}
}

// requestsOf returns the proxy's requests for resource, as one line each, for logs.
func requestsOf(p *faultproxy.Proxy, resource string) []string {
	var out []string
	for _, r := range p.Requests() {
		if r.Resource == resource && r.Subresource == "" && r.Name == "" {
			out = append(out, fmt.Sprintf("%s rv=%q sendInitialEvents=%v at %s", r.Verb, r.ResourceVersion, r.SendInitialEvents, r.Time.Format("15:04:05.000")))
		}
	}
	return out
}

// relists counts the lists and streaming lists of resource the proxy saw.
func relists(p *faultproxy.Proxy, resource string) int {
	n := 0
	for _, r := range p.Requests() {
		if r.Resource == resource && r.Subresource == "" && (r.Verb == "list" || r.SendInitialEvents) {
			n++
		}
	}
	return n
}
