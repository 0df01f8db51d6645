package dashboard

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/rollout"
)

// bigView is a controller view of n managed nodes, a third of them migrated for gce-pd,
// each with two gce-pd volumes.
type bigView struct {
	nodes []migration.NodeObjects
	pairs []readmodel.PairState
}

func (v *bigView) Snapshot() []readmodel.PairState         { return v.pairs }
func (v *bigView) RecentOperations() []readmodel.Operation { return nil }
func (v *bigView) Config() migration.Config                { return migration.DefaultConfig() }
func (v *bigView) ManagedNodes() []migration.NodeObjects   { return v.nodes }

// OtherController implements rollout.ControllerView: none seen.
func (v *bigView) OtherController() readmodel.OtherController { return readmodel.OtherController{} }

func (v *bigView) RecentFlips() []readmodel.NodeFlip         { return nil }
func (v *bigView) OperationsUnderWay() []readmodel.Operation { return nil }

func newBigView(n int) *bigView {
	v := &bigView{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%04d", i)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		node.Status.NodeInfo.KubeletVersion = "v1.36.3"
		cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mech := migration.MechanismInTree
		if i%3 == 0 {
			cn.Annotations = map[string]string{migration.MigratedPluginsAnnotation: "kubernetes.io/gce-pd"}
			mech = migration.MechanismCSI
		}
		v.nodes = append(v.nodes, migration.NodeObjects{Name: name, Node: node, CSINode: cn})
		for j := 0; j < 2; j++ {
			v.pairs = append(v.pairs, readmodel.PairState{Node: name, Pod: fmt.Sprintf("ns/pod-%d-%d", i, j), Volume: "data", PV: fmt.Sprintf("pv-%d-%d", i, j),
				Plugin: "kubernetes.io/gce-pd", Mechanism: mech, Phase: readmodel.PhaseAttached})
		}
	}
	return v
}

// BenchmarkNodesPage is the server time of the node view of 1000 nodes: building the report
// from the controller's state and rendering the page (budget: 200 ms).
func BenchmarkNodesPage(b *testing.B) {
	view := newBigView(1000)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		p := newNodesPage(rollout.FromController(view, now).NodesView(rollout.NodeFilter{Plugin: "kubernetes.io/gce-pd"}))
		renderNodes(&buf, p)
		if len(p.Rows) != 1000 {
			b.Fatalf("%d rows", len(p.Rows))
		}
	}
}
