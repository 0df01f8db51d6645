package metrics

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/migration-aware/adc/pkg/adc"
)

// TestWorkqueueMetrics: importing this package installs the workqueue metrics provider, so a
// controller's named queues show up in the legacy registry (served on /metrics).
func TestWorkqueueMetrics(t *testing.T) {
	if _, err := Legacy(); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	if _, err := adc.New(client, nil, informers.NewSharedInformerFactory(client, 0), adc.Options{}); err != nil {
		t.Fatalf("creating the controller: %v", err)
	}
	depth := gather(t, legacyregistry.DefaultGatherer)["workqueue_depth"]
	if depth == nil {
		t.Fatal("workqueue_depth is not in the legacy registry")
	}
	found := map[string]bool{}
	for _, m := range depth.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				found[l.GetValue()] = true
			}
		}
	}
	for _, q := range []string{"adc_node", "adc_node_status"} {
		if !found[q] {
			t.Errorf(`workqueue_depth{name=%q} missing; queues seen: %v`, q, found)
		}
	}
}
