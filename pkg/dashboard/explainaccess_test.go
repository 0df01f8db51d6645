package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/migration-aware/adc/pkg/explain"
	"github.com/migration-aware/adc/pkg/server"
)

// TestExplainConcurrencyCap: past maxConcurrentExplains explanations under way, page and
// API together, a request is answered 429 at once without reading; once one ends, the next
// is served.
func TestExplainConcurrencyCap(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, maxConcurrentExplains)
	var mu sync.Mutex
	calls := 0
	source := func(ctx context.Context, tg explain.Target) (explain.Report, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		started <- struct{}{}
		<-release
		return explain.Report{Target: tg}, nil
	}
	allowAll := func(*http.Request, string, string, string, string) error { return nil }
	limit := make(chan struct{}, maxConcurrentExplains)
	page, api := explainHandler(source, false, limit, allowAll), explainHandler(source, true, limit, allowAll)

	var wg sync.WaitGroup
	codes := make(chan int, maxConcurrentExplains)
	for i := 0; i < maxConcurrentExplains; i++ {
		h := page
		if i%2 == 1 {
			h = api
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ExplainAPIPath+"?pod=db/pg-0", nil))
			codes <- rec.Code
		}()
	}
	for i := 0; i < maxConcurrentExplains; i++ {
		<-started
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ExplainAPIPath+"?pod=db/pg-1", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("explanation past the cap: %d (Retry-After %q), want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("an explanation within the cap answered %d", c)
		}
	}
	rec = httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ExplainAPIPath+"?pod=db/pg-1", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("explanation after the others ended: %d, want 200", rec.Code)
	}
	if calls != maxConcurrentExplains+1 {
		t.Errorf("source called %d times, want %d (the refused request must not read)", calls, maxConcurrentExplains+1)
	}
}

// TestExplainNamespaceAccess: an explanation is answered only to a user who may get pods in
// the namespace it shows; a pod target is checked before anything is read, a volume's
// pods once the volume is read. A failed check (no authorizer answered) is 503.
func TestExplainNamespaceAccess(t *testing.T) {
	var read []string
	source := func(_ context.Context, tg explain.Target) (explain.Report, error) {
		read = append(read, tg.String())
		r := explain.Report{Target: tg}
		if tg.Kind == explain.KindPV {
			r.Pods = []explain.Pod{{Namespace: "team-b", Name: "db-0"}}
		} else {
			r.Pods = []explain.Pod{{Namespace: tg.Namespace, Name: tg.Name}}
		}
		return r, nil
	}
	var asked []string
	access := func(_ *http.Request, verb, group, resource, namespace string) error {
		asked = append(asked, verb+" "+resource+" "+namespace)
		switch namespace {
		case "team-b":
			return &server.AccessError{Msg: `user "alice" may not get pods in namespace team-b`}
		case "broken":
			return &server.AccessError{Msg: "the API server did not answer", Unavailable: true}
		}
		return nil
	}
	h := explainHandler(source, true, make(chan struct{}, 1), access)
	for _, tc := range []struct {
		query      string
		code       int
		wantRead   bool
		wantAsked0 string
	}{
		{"?pod=team-a/web-0", http.StatusOK, true, "get pods team-a"},
		{"?pod=team-b/db-0", http.StatusForbidden, false, "get pods team-b"},
		{"?pod=broken/x", http.StatusServiceUnavailable, false, "get pods broken"},
		// The volume may be read, but its pod is in a namespace the user may not see.
		{"?pv=pv-1", http.StatusForbidden, true, "get persistentvolumes "},
	} {
		read, asked = nil, nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ExplainAPIPath+tc.query, nil))
		if rec.Code != tc.code {
			t.Errorf("%s: %d, want %d: %s", tc.query, rec.Code, tc.code, rec.Body)
		}
		if (len(read) > 0) != tc.wantRead {
			t.Errorf("%s: read %v, want a read: %v", tc.query, read, tc.wantRead)
		}
		if len(asked) == 0 || asked[0] != tc.wantAsked0 {
			t.Errorf("%s: access asked %q, want first %q", tc.query, asked, tc.wantAsked0)
		}
	}
}
