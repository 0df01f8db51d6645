package adc

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// TestClusterReaderReadsTheCaches: an explanation's scoped read from the controller's caches
// sees the namespace's pods (scheduled or not) and claims, only the volumes they name, and
// the cluster-scoped objects; before the caches have synced it refuses.
func TestClusterReaderReadsTheCaches(t *testing.T) {
	f := newFixture(t, Options{})
	f.node("n1")
	f.volume("pv1", "h1", v1.ReadWriteOnce)
	f.volume("pv2", "h2", v1.ReadWriteOnce)
	f.pod("p1", "n1", "pv1")
	f.store(f.pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "q"}, Spec: v1.PodSpec{NodeName: "n1"}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending"}})
	f.store(f.vas, f.va("h1", "pv1", "n1", "uid-va", "1", true))

	r := f.c.ClusterReader()
	cfg := migration.DefaultConfig()
	if _, err := plan.ReadCluster(f.ctx, r, cfg, plan.Scope{Namespace: "ns"}); !errors.Is(err, errNotSynced) {
		t.Fatalf("read before the caches synced: %v, want errNotSynced", err)
	}
	f.c.started.Store(true)
	cl, err := plan.ReadCluster(f.ctx, r, cfg, plan.Scope{Namespace: "ns", Unscheduled: true, VolumeAttachments: true})
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, p := range cl.Pods {
		pods = append(pods, p.Namespace+"/"+p.Name)
	}
	if len(pods) != 2 || pods[0] == "other/q" || pods[1] == "other/q" {
		t.Errorf("pods of namespace ns: %v, want ns/p1 and ns/pending", pods)
	}
	if len(cl.Objects.PVCs) != 2 || len(cl.Objects.PVs) != 2 {
		t.Errorf("read %d claims and %d volumes, want the namespace's 2 and the 2 they name", len(cl.Objects.PVCs), len(cl.Objects.PVs))
	}
	if len(cl.Objects.Nodes) != 1 || len(cl.Objects.CSINodes) != 1 || len(cl.Objects.CSIDrivers) != 1 || len(cl.VolumeAttachments) != 1 {
		t.Errorf("cluster-scoped objects: %d nodes, %d CSINodes, %d CSIDrivers, %d VolumeAttachments, want 1 each",
			len(cl.Objects.Nodes), len(cl.Objects.CSINodes), len(cl.Objects.CSIDrivers), len(cl.VolumeAttachments))
	}
	cl, err = plan.ReadCluster(f.ctx, r, cfg, plan.Scope{Namespace: "ns"})
	if err != nil || len(cl.Pods) != 1 || cl.VolumeAttachments != nil {
		t.Errorf("scheduled pods only, no VolumeAttachments: %d pods, %d VolumeAttachments, err %v", len(cl.Pods), len(cl.VolumeAttachments), err)
	}
}
