package faultproxy

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const (
	nodesPath = "/api/v1/nodes"
	podsPath  = "/api/v1/namespaces/x/pods"
)

func TestFreezeHoldsThenDeliversInOrder(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	nodes := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=10")
	pods := openWatch(t, p.URL()+podsPath+"?watch=true&resourceVersion=10")
	api.waitWatchers(t, nodesPath, 1)
	api.waitWatchers(t, podsPath, 1)
	api.send(nodesPath, "e1;")
	nodes.expect(t, "e1;")

	p.Freeze("nodes")
	api.send(nodesPath, "e2;")
	api.send(nodesPath, "e3;")
	api.end(nodesPath) // the end of the stream is held too
	api.send(podsPath, "p1;")
	pods.expect(t, "p1;")
	list := do(t.Context(), http.MethodGet, p.URL()+nodesPath+"?labelSelector=a%3Db")
	held := do(t.Context(), http.MethodGet, p.URL()+nodesPath+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
	nodes.expectNothing(t, 300*time.Millisecond)
	wantNoAnswer(t, list, 0)
	api.waitWatchers(t, nodesPath, 0) // the new watch was not forwarded

	p.Heal("nodes")
	nodes.expect(t, "e2;e3;")
	if err := nodes.expectEnd(t); err != io.EOF {
		t.Fatalf("watch ended with %v, want io.EOF as upstream ended it", err)
	}
	if a := wantAnswer(t, list, http.StatusOK); a.body != "get "+nodesPath {
		t.Fatalf("list answered %q", a.body)
	}
	api.waitWatchers(t, nodesPath, 1) // the held watch went through on Heal
	api.end(nodesPath)
	wantAnswer(t, held, http.StatusOK)
}

func TestCutClosesStreamsAndAnswers503(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	nodes := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=10")
	pods := openWatch(t, p.URL()+podsPath+"?watch=true&resourceVersion=10")
	api.waitWatchers(t, nodesPath, 1)
	api.waitWatchers(t, podsPath, 1)

	p.Cut("nodes")
	err := nodes.expectEnd(t)
	if err == nil || err == io.EOF {
		t.Fatalf("cut watch ended with %v, want an aborted stream", err)
	}
	t.Logf("client saw the cut watch end with: %v", err)
	api.waitWatchers(t, nodesPath, 0) // the upstream watch was closed too
	wantStatus(t, wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath), http.StatusServiceUnavailable), metav1.StatusReasonServiceUnavailable)
	wantStatus(t, wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath+"?watch=true"), http.StatusServiceUnavailable), metav1.StatusReasonServiceUnavailable)
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath+"/n1"), http.StatusOK)
	api.send(podsPath, "p1;")
	pods.expect(t, "p1;")

	p.Heal("nodes")
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath), http.StatusOK)
	again := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=10")
	api.waitWatchers(t, nodesPath, 1)
	api.send(nodesPath, "e1;")
	again.expect(t, "e1;")
}

func TestExpireDropsHeldDataAndAnswers410UntilRelist(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	resume := p.URL() + nodesPath + "?watch=true&resourceVersion=10&allowWatchBookmarks=true"
	nodes := openWatch(t, resume)
	api.waitWatchers(t, nodesPath, 1)
	api.send(nodesPath, "e1;")
	nodes.expect(t, "e1;")

	// Freeze, then Expire: the held event is dropped, resuming is refused at once, and the
	// relist waits for Heal.
	p.Freeze("nodes")
	api.send(nodesPath, "e2;")
	p.Expire("nodes")
	if err := nodes.expectEnd(t); err == io.EOF {
		t.Fatal("expired watch ended cleanly, want an aborted stream")
	}
	wantStatus(t, wantAnswer(t, do(t.Context(), http.MethodGet, resume), http.StatusGone), metav1.StatusReasonExpired)
	list := do(t.Context(), http.MethodGet, p.URL()+nodesPath+"?resourceVersion=10")
	wantNoAnswer(t, list, 200*time.Millisecond)
	p.Heal("nodes")
	wantAnswer(t, list, http.StatusOK)

	// Expire alone: only watches resuming from a resourceVersion are refused, until a relist.
	p.Expire("nodes")
	wantStatus(t, wantAnswer(t, do(t.Context(), http.MethodGet, resume), http.StatusGone), metav1.StatusReasonExpired)
	fromZero := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=0")
	fromZero.cancel()
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath+"/n1?resourceVersion=10"), http.StatusOK)
	resumingPods := openWatch(t, p.URL()+"/api/v1/pods?watch=true&resourceVersion=10")
	resumingPods.cancel()
	wantAnswer(t, do(t.Context(), http.MethodGet, resume), http.StatusGone) // still expired
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+nodesPath+"?limit=500"), http.StatusOK)
	openWatch(t, resume).cancel() // the list ended the expiry

	// A streaming list ends it as well.
	p.Expire("nodes")
	openWatch(t, p.URL()+nodesPath+"?watch=true&sendInitialEvents=true&resourceVersion=10&resourceVersionMatch=NotOlderThan").cancel()
	openWatch(t, resume).cancel()
}

func TestDelayHoldsEveryChunkInOrder(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	nodes := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=10")
	pods := openWatch(t, p.URL()+podsPath+"?watch=true&resourceVersion=10")
	api.waitWatchers(t, nodesPath, 1)
	api.waitWatchers(t, podsPath, 1)

	// The order of events, not a duration: what the delayed resource's upstream sent first
	// arrives after what an undelayed one sent later, and all of it, in order.
	const d = time.Second
	p.Delay("nodes", d)
	start := time.Now()
	api.send(nodesPath, "e1;")
	api.send(nodesPath, "e2;")
	api.send(nodesPath, "e3;")
	api.send(podsPath, "p1;")
	pods.expect(t, "p1;")
	nodes.expectNothingYet(t)
	nodes.expect(t, "e1;e2;e3;")
	t.Logf("delayed watch delivered after %s (delay %s)", time.Since(start).Round(time.Millisecond), d)

	start = time.Now()
	list := do(t.Context(), http.MethodGet, p.URL()+nodesPath)
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+podsPath), http.StatusOK)
	select {
	case a := <-list:
		t.Fatalf("delayed list answered %d %q before the undelayed one sent after it", a.code, a.body)
	default:
	}
	wantAnswer(t, list, http.StatusOK)
	t.Logf("delayed list answered after %s (delay %s)", time.Since(start).Round(time.Millisecond), d)

	// Heal lets a chunk that is still waiting out its delay through at once.
	p.Delay("nodes", time.Hour)
	api.send(nodesPath, "e4;")
	nodes.expectNothing(t, 100*time.Millisecond)
	p.Heal("nodes")
	nodes.expect(t, "e4;")
}

func TestSingleObjectsWritesAndSubresourcesPass(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	for _, fault := range []func(string){p.Freeze, p.Expire, p.Cut} {
		fault("nodes")
		for _, r := range []struct {
			method, path string
			code         int
		}{
			{http.MethodGet, nodesPath + "/n1", http.StatusOK},
			{http.MethodGet, nodesPath + "/n1?resourceVersion=10", http.StatusOK},
			{http.MethodGet, nodesPath + "/n1/status", http.StatusOK},
			{http.MethodPost, nodesPath, http.StatusCreated},
			{http.MethodPut, nodesPath + "/n1", http.StatusOK},
			{http.MethodPatch, nodesPath + "/n1/status", http.StatusOK},
			{http.MethodDelete, nodesPath + "/n1", http.StatusOK},
			{http.MethodGet, "/api/v1/pods", http.StatusOK},
			{http.MethodGet, "/version", http.StatusOK},
		} {
			a := wantAnswer(t, do(t.Context(), r.method, p.URL()+r.path), r.code)
			if a.body == "" {
				t.Fatalf("%s %s: empty body", r.method, r.path)
			}
		}
	}
}

func TestCountsRequests(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, nodesPath + "/n1"},
		{http.MethodGet, nodesPath + "/n2"},
		{http.MethodGet, nodesPath},
		{http.MethodGet, nodesPath + "?fieldSelector=metadata.name%3Dn1"},
		{http.MethodPatch, nodesPath + "/n1/status"},
		{http.MethodPost, "/api/v1/namespaces/ns/pods"},
		{http.MethodGet, "/api/v1/pods"},
		{http.MethodDelete, "/apis/storage.k8s.io/v1/volumeattachments/va1"},
		{http.MethodGet, "/version"},
	} {
		wantAnswer(t, do(t.Context(), r.method, p.URL()+r.path), http.StatusOK|map[bool]int{true: http.StatusCreated}[r.method == http.MethodPost])
	}
	w := openWatch(t, p.URL()+"/apis/storage.k8s.io/v1/volumeattachments?watch=true&sendInitialEvents=true")
	w.cancel()

	for _, c := range []struct {
		verb, resource string
		want           int
	}{
		{"get", "nodes", 2},
		{"list", "nodes", 2},
		{"patch", "nodes", 0},
		{"patch", "nodes/status", 1},
		{"create", "pods", 1},
		{"list", "pods", 1},
		{"delete", "volumeattachments", 1},
		{"watch", "volumeattachments", 1},
		{"list", "volumeattachments", 0},
	} {
		if got := p.Count(c.verb, c.resource); got != c.want {
			t.Errorf("Count(%q, %q) = %d, want %d", c.verb, c.resource, got, c.want)
		}
	}
	reqs := p.Requests()
	if len(reqs) != 10 {
		t.Fatalf("%d requests recorded, want 10: %+v", len(reqs), reqs)
	}
	if r := reqs[3]; r.Verb != "list" || r.Name != "n1" {
		t.Errorf("list with a metadata.name field selector recorded as %+v", r)
	}
	if r := reqs[5]; r.Verb != "create" || r.Resource != "pods" || r.Namespace != "ns" {
		t.Errorf("create recorded as %+v", r)
	}
	if r := reqs[8]; r.Verb != "get" || r.Resource != "" {
		t.Errorf("/version recorded as %+v", r)
	}
	if r := reqs[9]; r.Verb != "watch" || !r.Watch || !r.SendInitialEvents || r.Resource != "volumeattachments" {
		t.Errorf("streaming list recorded as %+v", r)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Time.Before(reqs[i-1].Time) {
			t.Errorf("request %d recorded before request %d", i, i-1)
		}
	}
	p.ResetCounts()
	if n, c := len(p.Requests()), p.Count("get", "nodes"); n != 0 || c != 0 {
		t.Fatalf("after ResetCounts: %d requests, Count = %d", n, c)
	}
}

func TestCloseReleasesHeldRequestsAndStreams(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	nodes := openWatch(t, p.URL()+nodesPath+"?watch=true&resourceVersion=10")
	api.waitWatchers(t, nodesPath, 1)
	p.Freeze("nodes")
	api.send(nodesPath, "e1;")
	list := do(t.Context(), http.MethodGet, p.URL()+nodesPath)
	wantNoAnswer(t, list, 100*time.Millisecond)

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := nodes.expectEnd(t); err == io.EOF {
		t.Fatal("watch ended cleanly on Close, want it aborted")
	}
	select {
	case a := <-list:
		if a.err == nil && a.code == http.StatusOK {
			t.Fatal("held list answered 200 after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held list still waiting 5s after Close")
	}
	checkNoGoroutines(t, "/test/faultproxy/")
}

func TestClientLeavingEndsItsHeldRequest(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	p.Freeze("nodes")
	ctx, cancel := context.WithCancel(t.Context())
	list := do(ctx, http.MethodGet, p.URL()+nodesPath)
	poll(t, "the list reaching the proxy", func() bool { return p.Count("list", "nodes") == 1 })
	nodes := openWatch(t, p.URL()+podsPath+"?watch=true")
	api.waitWatchers(t, podsPath, 1)
	p.Freeze("pods")
	api.send(podsPath, "p1;")
	cancel()
	nodes.cancel()
	<-list
	checkNoGoroutines(t, "faultproxy.(*Proxy).serveHTTP")
	checkNoGoroutines(t, "faultproxy.(*stream)")
}

func TestStartEndsWithContext(t *testing.T) {
	api := newFakeAPI(t)
	p, err := New(&rest.Config{Host: api.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, do(t.Context(), http.MethodGet, p.URL()+"/version"), http.StatusOK)
	cancel()
	poll(t, "the proxy refusing connections", func() bool {
		a := <-do(t.Context(), http.MethodGet, p.URL()+"/version")
		return a.err != nil
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoGoroutines(t, "/test/faultproxy/")
	if err := p.Start(t.Context()); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestConfigPointsAtTheProxy(t *testing.T) {
	api := newFakeAPI(t)
	p := startProxy(t, api)
	cfg := p.Config()
	if cfg.Host != p.URL() || cfg.QPS != 7 || cfg.Burst != 9 || cfg.ContentType != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("Config() = host %q qps %v burst %d content type %q", cfg.Host, cfg.QPS, cfg.Burst, cfg.ContentType)
	}
	if cfg.BearerToken != "" || len(cfg.CertData) != 0 || cfg.Insecure || len(cfg.CAData) != 0 {
		t.Fatal("Config() carries credentials or TLS settings")
	}
}
