package serving

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/pkg/rollout/rollouttest"
	"github.com/migration-aware/adc/pkg/server"
)

// A replica fenced by another attach/detach controller stays ready (restarting it would not
// help), and /readyz?verbose says why it writes nothing.
func TestOtherControllerReadiness(t *testing.T) {
	view := rollouttest.Fixture()
	srv := server.New()
	srv.AddReadyCheck(OtherControllerCheck(func() rollout.ControllerView { return view }))
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]other-attach-detach-controller ok\n") {
		t.Errorf("not fenced: %d %q, want 200 with a plain ok line", code, body)
	}
	seen := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	view.Other = readmodel.OtherController{Fenced: true, Manager: "kube-controller-manager", Object: "Node/status.volumesAttached",
		Name: "n1", Node: "n1", Seen: seen, Until: seen.Add(2 * time.Minute)}
	code, body := get("/readyz?verbose")
	if code != http.StatusOK {
		t.Errorf("fenced: status %d, want 200 (ready)", code)
	}
	for _, want := range []string{"[+]other-attach-detach-controller ok: fenced", "kube-controller-manager", "until 2026-11-28T10:02:00Z"} {
		if !strings.Contains(body, want) {
			t.Errorf("fenced: /readyz?verbose = %q, want it to contain %q", body, want)
		}
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok" {
		t.Errorf("fenced: /readyz = %d %q, want 200 ok", code, body)
	}
}
