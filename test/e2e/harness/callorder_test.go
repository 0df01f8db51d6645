package harness

import (
	"strings"
	"testing"
	"time"
)

func TestDetachOrderViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// call returns a call that arrived at start ms and returned 10 ms later.
	call := func(method, vol, node string, start int) Call {
		return Call{Method: method, VolumeID: vol, Node: node, Start: at(start), Time: at(start + 10), Code: "OK"}
	}
	failed := func(c Call) Call { c.Code = "Internal"; return c }
	mounted := []Call{
		call("ControllerPublishVolume", "v", "", 0),
		call("NodeStageVolume", "v", "n1", 100),
		call("NodePublishVolume", "v", "n1", 200),
	}
	cases := []struct {
		name  string
		calls []Call
		want  []string // substrings, one per violation, in order
	}{
		{name: "unpublish and unstage before the detach", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("ControllerUnpublishVolume", "v", "", 500))},
		{name: "detach as the unstage returns", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("ControllerUnpublishVolume", "v", "", 410))},
		{name: "detach while published and staged", calls: append(append([]Call(nil), mounted...),
			call("ControllerUnpublishVolume", "v", "", 300)),
			want: []string{"node n1 still had it published", "node n1 still had it staged"}},
		{name: "detach while the unstage runs", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("ControllerUnpublishVolume", "v", "", 405)),
			want: []string{"node n1 still had it staged"}},
		{name: "failed unstage leaves it staged", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			failed(call("NodeUnstageVolume", "v", "n1", 400)),
			call("ControllerUnpublishVolume", "v", "", 500)),
			want: []string{"still had it staged"}},
		{name: "failed detach attempt while staged counts", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			failed(call("ControllerUnpublishVolume", "v", "", 350))),
			want: []string{"(Internal) while node n1 still had it staged"}},
		{name: "stage that began before the detach counts", calls: []Call{
			call("ControllerPublishVolume", "v", "", 0),
			call("NodeStageVolume", "v", "n1", 100),
			call("ControllerUnpublishVolume", "v", "", 105)},
			want: []string{"still had it staged"}},
		{name: "moved: detach from n1 after it let go, n2 mounts after", calls: append(append([]Call(nil), mounted...),
			call("NodeUnpublishVolume", "v", "n1", 300),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("ControllerUnpublishVolume", "v", "", 500),
			call("ControllerPublishVolume", "v", "", 600),
			call("NodeStageVolume", "v", "n2", 700),
			call("NodePublishVolume", "v", "n2", 800))},
		{name: "other volumes do not count", calls: append(append([]Call(nil), mounted...),
			call("NodeStageVolume", "w", "n1", 250),
			call("NodeUnpublishVolume", "v", "n1", 300),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("ControllerUnpublishVolume", "v", "", 500))},
		{name: "log order is not time order", calls: []Call{
			call("ControllerUnpublishVolume", "v", "", 500),
			call("NodeUnstageVolume", "v", "n1", 400),
			call("NodeStageVolume", "v", "n1", 100)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DetachOrderViolations(tc.calls)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}
