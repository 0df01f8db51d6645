package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Adopt, roll back, upgrade":                        "adopt-roll-back-upgrade",
		"Rollout dashboard, metrics and `adc status`":      "rollout-dashboard-metrics-and-adc-status",
		"Why is this volume (not) attached: `adc explain`": "why-is-this-volume-not-attached-adc-explain",
		"Flags of [adc](README.md) 1.2":                    "flags-of-adc-12",
		"snake_case and -dash-":                            "snake_case-and--dash-",
	} {
		if got := Slug(h); got != want {
			t.Errorf("Slug(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("b.md", "# Title\n## Same\n## Same\n<a name=\"custom\"></a>\n```\n# not a heading\n```\n")
	a := write("a.md", strings.Join([]string{
		"# A", "[ok](b.md#title) [ok](b.md#same-1) [ok](b.md#custom) [ok](#a) [web](https://example.com/x#y)",
		"[bad](b.md#not-a-heading) [bad](missing.md) [bad](#nope)",
		"`[code](missing.md)`",
		"```", "[fenced](missing.md)", "```",
		"[ref]: b.md#same-2",
	}, "\n"))
	problems, err := checkFile(a)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b.md#not-a-heading", "missing.md", "#nope", "b.md#same-2"}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(problems[i], ": "+w+": ") {
			t.Errorf("problem %d = %q, want it about %s", i, problems[i], w)
		}
	}
}
