package migration

import (
	"reflect"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFlips(t *testing.T) {
	const gce, ebs = "kubernetes.io/gce-pd", "kubernetes.io/aws-ebs"
	m, n, u := NodeStateMigrated, NodeStateNotMigrated, NodeStateUnknown
	for _, tc := range []struct {
		name          string
		before, after PluginStates
		want          []PluginFlip
	}{
		{"nothing changes", PluginStates{gce: m}, PluginStates{gce: m}, nil},
		{"a plugin becomes migrated", PluginStates{gce: n, ebs: n}, PluginStates{gce: m, ebs: n}, []PluginFlip{{gce, true}}},
		{"a plugin is no longer migrated", PluginStates{gce: m}, PluginStates{gce: n}, []PluginFlip{{gce, false}}},
		{"first report is not a flip", PluginStates{gce: u}, PluginStates{gce: m}, nil},
		{"no longer reporting is not a flip", PluginStates{gce: m}, PluginStates{gce: u}, nil},
		{"two plugins flip, in table order", PluginStates{gce: n, ebs: m}, PluginStates{gce: m, ebs: n}, []PluginFlip{{ebs, false}, {gce, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Flips(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Flips = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodePluginStatesReadsTheAnnotation(t *testing.T) {
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Annotations: map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}}}
	got := NodePluginStates(NodeSourceCSINode, NodeObjects{Name: "n1", CSINode: csiNode})
	if len(got) != len(MigratablePlugins) {
		t.Fatalf("%d plugins, want %d", len(got), len(MigratablePlugins))
	}
	if got["kubernetes.io/gce-pd"] != NodeStateMigrated || got["kubernetes.io/aws-ebs"] != NodeStateNotMigrated {
		t.Errorf("states = %v", got)
	}
	if s := NodePluginStates(NodeSourceCSINode, NodeObjects{Name: "n1"})["kubernetes.io/gce-pd"]; s != NodeStateUnknown {
		t.Errorf("without CSINode: %v, want unknown", s)
	}
}
