package faultproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// fakeAPI is an upstream that answers lists and single GETs with fixed bodies and serves
// watch streams whose chunks the test sends one by one.
type fakeAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	watchers map[string][]chan string // by path
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	a := &fakeAPI{watchers: map[string][]chan string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		ch := make(chan string, 100)
		a.mu.Lock()
		a.watchers[r.URL.Path] = append(a.watchers[r.URL.Path], ch)
		a.mu.Unlock()
		defer a.forget(r.URL.Path, ch)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case s, ok := <-ch:
				if !ok {
					return
				}
				_, _ = io.WriteString(w, s)
				w.(http.Flusher).Flush()
			}
		}
	case r.Method == http.MethodGet:
		_, _ = fmt.Fprintf(w, "get %s", r.URL.Path)
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, "created %s", r.URL.Path)
	default:
		_, _ = fmt.Fprintf(w, "%s %s", strings.ToLower(r.Method), r.URL.Path)
	}
}

func (a *fakeAPI) forget(path string, ch chan string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.watchers[path]
	for i, c := range list {
		if c == ch {
			a.watchers[path] = append(list[:i:i], list[i+1:]...)
			return
		}
	}
}

// send writes s to every open watch of path.
func (a *fakeAPI) send(path, s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ch := range a.watchers[path] {
		ch <- s
	}
}

// end closes every open watch of path, as the API server does at a watch's timeout.
func (a *fakeAPI) end(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ch := range a.watchers[path] {
		close(ch)
	}
	a.watchers[path] = nil
}

func (a *fakeAPI) waitWatchers(t *testing.T, path string, n int) {
	t.Helper()
	poll(t, fmt.Sprintf("%d upstream watches of %s", n, path), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.watchers[path]) == n
	})
}

// startProxy starts a proxy in front of a and closes it at the end of the test, then checks
// that none of its goroutines is left.
func startProxy(t *testing.T, a *fakeAPI) *Proxy {
	t.Helper()
	p, err := New(&rest.Config{Host: a.srv.URL, QPS: 7, Burst: 9, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkNoGoroutines(t, "/test/faultproxy/")
	})
	return p
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// checkNoGoroutines fails when a goroutine still runs code of this package outside the tests
// in a function whose stack line contains match.
func checkNoGoroutines(t *testing.T, match string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		last = ""
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, line := range strings.Split(g, "\n") {
				if strings.Contains(line, match) && !strings.Contains(line, "_test.go:") && !strings.Contains(line, "_test.") {
					last = g
				}
			}
		}
		return last == "", nil
	})
	if err != nil {
		t.Errorf("a goroutine matching %q is left:\n%s", match, last)
	}
}

// watchConn is a client's watch through the proxy; a goroutine hands on what it reads, in
// order, on one channel: with separate data and error channels a select could see the end
// of the stream before the last data.
type watchConn struct {
	reads  chan watchRead
	cancel context.CancelFunc
}

// watchRead is one read of the watch: data, or the error that ended it.
type watchRead struct {
	data string
	err  error
}

// openWatch GETs url and fails unless the answer is 200.
func openWatch(t *testing.T, url string) *watchConn {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	wc := &watchConn{reads: make(chan watchRead, 100), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				wc.reads <- watchRead{data: string(buf[:n])}
			}
			if err != nil {
				wc.reads <- watchRead{err: err}
				return
			}
		}
	}()
	return wc
}

// expect reads until it has got exactly want, which may come in several chunks.
func (wc *watchConn) expect(t *testing.T, want string) {
	t.Helper()
	got := ""
	timeout := time.After(5 * time.Second)
	for got != want {
		if !strings.HasPrefix(want, got) {
			t.Fatalf("watch delivered %q, want %q", got, want)
		}
		select {
		case r := <-wc.reads:
			if r.err != nil {
				t.Fatalf("watch ended (%v) after %q, want %q", r.err, got, want)
			}
			got += r.data
		case <-timeout:
			t.Fatalf("watch delivered %q within 5s, want %q", got, want)
		}
	}
}

// expectNothing fails when the watch delivers or ends within d.
func (wc *watchConn) expectNothing(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case r := <-wc.reads:
		if r.err != nil {
			t.Fatalf("watch ended (%v), want it open for %s", r.err, d)
		}
		t.Fatalf("watch delivered %q, want nothing for %s", r.data, d)
	case <-time.After(d):
	}
}

// expectNothingYet fails when the watch has delivered or ended by now.
func (wc *watchConn) expectNothingYet(t *testing.T) {
	t.Helper()
	select {
	case r := <-wc.reads:
		t.Fatalf("watch delivered %q (err %v), want nothing yet", r.data, r.err)
	default:
	}
}

// expectEnd fails unless the watch ends within 5 s without delivering anything more.
func (wc *watchConn) expectEnd(t *testing.T) error {
	t.Helper()
	select {
	case r := <-wc.reads:
		if r.err == nil {
			t.Fatalf("watch delivered %q, want it closed", r.data)
		}
		return r.err
	case <-time.After(5 * time.Second):
		t.Fatal("watch still open after 5s, want it closed")
	}
	return nil
}

// answer is one finished request.
type answer struct {
	code        int
	contentType string
	body        string
	err         error
}

// do sends a request through the proxy in the background and hands on the answer.
func do(ctx context.Context, method, url string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			out <- answer{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		out <- answer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(body), err: err}
	}()
	return out
}

func wantAnswer(t *testing.T, ch <-chan answer, code int) answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil || a.code != code {
			t.Fatalf("answer %d %q (err %v), want %d", a.code, a.body, a.err, code)
		}
		return a
	case <-time.After(5 * time.Second):
		t.Fatalf("no answer within 5s, want %d", code)
	}
	return answer{}
}

func wantNoAnswer(t *testing.T, ch <-chan answer, d time.Duration) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("answer %d %q (err %v) within %s, want the request held", a.code, a.body, a.err, d)
	case <-time.After(d):
	}
}

// wantStatus checks that a carries a metav1.Status client-go can decode.
func wantStatus(t *testing.T, a answer, reason metav1.StatusReason) {
	t.Helper()
	if a.contentType != "application/json" {
		t.Errorf("Content-Type %q, want application/json", a.contentType)
	}
	var st metav1.Status
	if err := json.Unmarshal([]byte(a.body), &st); err != nil {
		t.Fatalf("decoding %q: %v", a.body, err)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Reason != reason || int(st.Code) != a.code {
		t.Fatalf("status %+v, want kind Status, apiVersion v1, reason %s, code %d", st, reason, a.code)
	}
}
