package dashboard

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/pkg/rollout"
)

func TestFormatting(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	tests := []struct {
		name, got, want string
	}{
		{"relative future", relative(at(4*time.Second), now), "in 4s"},
		{"relative past", relative(at(-90*time.Second), now), "1m30s ago"},
		{"relative now", relative(at(200*time.Millisecond), now), "now"},
		{"relative unknown", relative(nil, now), "-"},
		{"relative zero", relative(&time.Time{}, now), "-"},
		{"due future", due(at(3*time.Second), now), "in 3s"},
		{"due passed", due(at(-time.Second), now), "due"},
		{"due unknown", due(nil, now), "-"},
		{"milliseconds", formatSeconds(0.3), "300 ms"},
		{"seconds", formatSeconds(2), "2.00 s"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestBarPercentages(t *testing.T) {
	tests := []struct {
		p                   rollout.PluginRollout
		migrated, not, unkn float64
	}{
		{rollout.PluginRollout{NodesMigrated: 1, NodesNotMigrated: 1, NodesUnknown: 1, NodesTotal: 3}, 33.3, 33.3, 33.3},
		{rollout.PluginRollout{NodesMigrated: 2, NodesNotMigrated: 1, NodesUnknown: 1, NodesTotal: 4}, 50, 25, 25},
		{rollout.PluginRollout{}, 0, 0, 0},
	}
	for _, tt := range tests {
		row := newPage(rollout.Report{Plugins: []rollout.PluginRollout{tt.p}}).Plugins[0]
		if row.MigratedPct != tt.migrated || row.NotMigratedPct != tt.not || row.UnknownPct != tt.unkn {
			t.Errorf("%+v: %v/%v/%v, want %v/%v/%v", tt.p, row.MigratedPct, row.NotMigratedPct, row.UnknownPct, tt.migrated, tt.not, tt.unkn)
		}
	}
}

// TestLongListsAreCut: thousands of held pairs render as maxRows rows and a pointer to the
// JSON, which has them all.
func TestLongListsAreCut(t *testing.T) {
	r := rollout.Report{}
	for i := 0; i < maxRows+5; i++ {
		r.Held = append(r.Held, rollout.HeldPair{Node: "n"})
		r.Notes = append(r.Notes, rollout.NodeNote{Node: "n"})
	}
	p := newPage(r)
	if len(p.HeldShown) != maxRows || p.HeldHidden != 5 || len(p.NotesShown) != maxRows || p.NotesHidden != 5 || p.ProblemsHidden != 0 {
		t.Errorf("held %d+%d, notes %d+%d", len(p.HeldShown), p.HeldHidden, len(p.NotesShown), p.NotesHidden)
	}
	var buf bytes.Buffer
	renderPage(&buf, p)
	if !strings.Contains(buf.String(), "… and 5 more held pairs") || strings.Count(buf.String(), `<tr data-node="n"`) != maxRows {
		t.Errorf("page does not cut the held pairs at %d rows", maxRows)
	}
}
