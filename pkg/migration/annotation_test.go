package migration

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMigratedPlugins(t *testing.T) {
	cases := []struct {
		name        string
		in          string
		wantPlugins []string
		wantUnknown []string
	}{
		{name: "empty", in: ""},
		{name: "only commas and spaces", in: " ,, , "},
		{name: "kubelet 1.36 value, sorted", in: allMigrated, wantPlugins: MigratablePlugins},
		{name: "single plugin", in: "kubernetes.io/gce-pd", wantPlugins: []string{"kubernetes.io/gce-pd"}},
		{name: "spaces and tabs around items", in: " kubernetes.io/gce-pd ,\tkubernetes.io/aws-ebs\t", wantPlugins: []string{"kubernetes.io/gce-pd", "kubernetes.io/aws-ebs"}},
		{name: "empty items", in: ",kubernetes.io/cinder,,", wantPlugins: []string{"kubernetes.io/cinder"}},
		{name: "duplicates collapse, first position kept", in: "kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/cinder", wantPlugins: []string{"kubernetes.io/cinder", "kubernetes.io/gce-pd"}},
		{name: "unknown names returned separately", in: "kubernetes.io/gce-pd,kubernetes.io/rbd,example.com/x", wantPlugins: []string{"kubernetes.io/gce-pd"}, wantUnknown: []string{"kubernetes.io/rbd", "example.com/x"}},
		{name: "unknown duplicates collapse", in: "foo,foo, foo ,bar", wantUnknown: []string{"foo", "bar"}},
		{name: "names are case sensitive", in: "Kubernetes.io/GCE-PD", wantUnknown: []string{"Kubernetes.io/GCE-PD"}},
		{name: "inner spaces are not trimmed", in: "kubernetes.io/ gce-pd", wantUnknown: []string{"kubernetes.io/ gce-pd"}},
		{name: "semicolon is not a separator", in: "kubernetes.io/gce-pd;kubernetes.io/aws-ebs", wantUnknown: []string{"kubernetes.io/gce-pd;kubernetes.io/aws-ebs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plugins, unknown := ParseMigratedPlugins(tc.in)
			if !reflect.DeepEqual(plugins, tc.wantPlugins) {
				t.Errorf("plugins = %q, want %q", plugins, tc.wantPlugins)
			}
			if !reflect.DeepEqual(unknown, tc.wantUnknown) {
				t.Errorf("unknown = %q, want %q", unknown, tc.wantUnknown)
			}
			checkAnnotationListsAgrees(t, tc.in)
		})
	}
}

// checkAnnotationListsAgrees verifies the allocation-free scanner Decide uses gives the same
// answers as the parser.
func checkAnnotationListsAgrees(t *testing.T, value string) {
	t.Helper()
	plugins, unknown := ParseMigratedPlugins(value)
	for _, p := range MigratablePlugins {
		found, hasUnknown := annotationLists(value, p)
		listed := false
		for _, q := range plugins {
			listed = listed || q == p
		}
		if found != listed {
			t.Errorf("annotationLists(%q, %q) found = %v, parser says %v", value, p, found, listed)
		}
		if hasUnknown != (len(unknown) > 0) {
			t.Errorf("annotationLists(%q) hasUnknown = %v, parser found %q", value, hasUnknown, unknown)
		}
	}
}

func TestParseMigratedPluginsManyUnknownStaysLinear(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("x")
		b.WriteString(strings.Repeat("y", i%50))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(",")
	}
	_, unknown := ParseMigratedPlugins(b.String())
	if len(unknown) == 0 || len(unknown) > 20000 {
		t.Fatalf("unexpected unknown count %d", len(unknown))
	}
	seen := map[string]bool{}
	for _, u := range unknown {
		if seen[u] {
			t.Fatalf("duplicate unknown %q", u)
		}
		seen[u] = true
	}
}

func TestParseMigratedPluginsAllocations(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() { ParseMigratedPlugins(allMigrated) })
	// The returned slice grows to 7 entries: a handful of allocations, never one per item.
	if allocs > 4 {
		t.Errorf("ParseMigratedPlugins(all seven) made %.0f allocations, want at most 4", allocs)
	}
	scan := testing.AllocsPerRun(100, func() { annotationLists(allMigrated+",foo", "kubernetes.io/gce-pd") })
	if scan != 0 {
		t.Errorf("annotationLists allocated %.0f times, want 0", scan)
	}
}
