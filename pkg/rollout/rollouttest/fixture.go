// Package rollouttest provides a fixed, mid-rollout controller view for the tests of the
// rollout report, the metrics and the dashboard, so all three are checked against the same
// numbers. Cluster data in it includes a <script> payload in a CSINode annotation and in an
// external-attacher error, to prove every consumer escapes it.
package rollouttest

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// Script is the hostile payload planted in cluster data.
const Script = "<script>alert(1)</script>"

// Now is the fixture's clock.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// View is a fixed rollout.ControllerView.
type View struct {
	Pairs []readmodel.PairState
	Ops   []readmodel.Operation
	Cfg   migration.Config
	Nodes []migration.NodeObjects
	Flips []readmodel.NodeFlip
	// Other is what the view says it saw of another attach/detach controller.
	Other readmodel.OtherController
}

// OtherController implements rollout.ControllerView.
func (v *View) OtherController() readmodel.OtherController { return v.Other }

// RecentFlips returns the fixed flips.
func (v *View) RecentFlips() []readmodel.NodeFlip {
	return append([]readmodel.NodeFlip(nil), v.Flips...)
}

// OperationsUnderWay implements rollout.ControllerView: none.
func (v *View) OperationsUnderWay() []readmodel.Operation { return nil }

// Snapshot returns the fixed pairs (a copy, as the controller does).
func (v *View) Snapshot() []readmodel.PairState {
	return append([]readmodel.PairState(nil), v.Pairs...)
}

// RecentOperations returns the fixed operations.
func (v *View) RecentOperations() []readmodel.Operation {
	return append([]readmodel.Operation(nil), v.Ops...)
}

// Config returns the fixed configuration.
func (v *View) Config() migration.Config { return v.Cfg }

// ManagedNodes returns the fixed managed nodes.
func (v *View) ManagedNodes() []migration.NodeObjects { return v.Nodes }

const (
	gce    = "kubernetes.io/gce-pd"
	ebs    = "kubernetes.io/aws-ebs"
	gceCSI = "pd.csi.storage.gke.io"
)

func csiNode(name, migrated string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if migrated != "" {
		n.Annotations = map[string]string{migration.MigratedPluginsAnnotation: migrated}
	}
	return n
}

// Fixture is a mid-rollout cluster on four managed nodes, with aws-ebs off (so node-a, which
// reports it migrated, is version skew) and portworx complete:
//
//	node-a  CSINode lists gce-pd and aws-ebs
//	node-b  CSINode lists gce-pd and the script payload (an unknown name, so a note)
//	node-c  CSINode without the annotation (nothing migrated)
//	node-d  no CSINode yet (unknown)
//
// gce-pd: 2 migrated, 1 not, 1 unknown of 4. Pairs by mechanism: csi 3, csi-no-attach 1,
// in-tree 1, not-attachable 1, wait 1, error 1; three held (wait, error, in-tree); one
// multi-attach and one version-skew problem; an attachment no pod needs on node-c; three
// operations, one failed with the script payload as its external-attacher error.
func Fixture() *View {
	cfg := migration.DefaultConfig().WithModes(map[string]migration.Mode{
		ebs:                             migration.ModeOff,
		"kubernetes.io/portworx-volume": migration.ModeComplete,
	})
	at := func(d time.Duration) time.Time { return Now.Add(d) }
	return &View{
		Cfg: cfg,
		Nodes: []migration.NodeObjects{
			{Name: "node-a", CSINode: csiNode("node-a", gce+","+ebs)},
			{Name: "node-b", CSINode: csiNode("node-b", gce+","+Script)},
			{Name: "node-c", CSINode: csiNode("node-c", "")},
			{Name: "node-d"},
		},
		Pairs: []readmodel.PairState{
			{Node: "node-a", Pod: "db/pg-0", Volume: "config", Plugin: "kubernetes.io/configmap", Mechanism: migration.MechanismNotAttachable,
				Phase: readmodel.PhaseNotNeeded, Since: at(-time.Hour)},
			{Node: "node-a", Pod: "db/pg-0", Volume: "data", PV: "pv-a", Plugin: gce, Driver: gceCSI, Mechanism: migration.MechanismCSI,
				Phase: readmodel.PhaseAttached, UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-a", VolumeAttachment: "csi-a", Since: at(-time.Hour)},
			{Node: "node-a", Pod: "web/app-0", Volume: "cache", PV: "pv-ebs", Plugin: ebs, Driver: "ebs.csi.aws.com", Mechanism: migration.MechanismError,
				Phase: readmodel.PhaseHeld, Retries: 3, NextRetry: at(4 * time.Second), Since: at(-90 * time.Second),
				Reason: `version skew: node "node-a" reports kubernetes.io/aws-ebs as migrated to CSI but adc has migration of kubernetes.io/aws-ebs off`},
			{Node: "node-b", Pod: "db/pg-1", Volume: "data", PV: "pv-b", Plugin: gce, Driver: gceCSI, Mechanism: migration.MechanismCSI,
				Phase: readmodel.PhaseAttached, UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-b", VolumeAttachment: "csi-b", Since: at(-10 * time.Minute)},
			{Node: "node-b", Pod: "web/app-2", Volume: "data", PV: "pv-a", Plugin: gce, Driver: gceCSI, Mechanism: migration.MechanismCSI,
				Phase: readmodel.PhaseMultiAttach, UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-a", Since: at(-2 * time.Minute),
				Reason: `volume is ReadWriteOnce and still attached to node "node-a"; it is attached here as soon as that attachment is gone`},
			{Node: "node-c", Pod: "web/app-1", Volume: "cache", PV: "pv-c", Plugin: gce, Driver: gceCSI, Mechanism: migration.MechanismInTree,
				Phase: readmodel.PhaseHeld, Retries: 1, NextRetry: at(2 * time.Second), Since: at(-30 * time.Second), UniqueName: "kubernetes.io/gce-pd/disk-c",
				Reason: `node "node-c" is not migrated for kubernetes.io/gce-pd and this adc has no in-tree attacher`},
			{Node: "node-c", Pod: "web/app-1", Volume: "shared", PV: "pv-nfs", Plugin: migration.CSIPluginName, Driver: "nfs.csi.k8s.io",
				Mechanism: migration.MechanismCSINoAttach, Phase: readmodel.PhaseNotNeeded, Since: at(-time.Hour)},
			{Node: "node-c", PV: "pv-old", Driver: gceCSI, Mechanism: migration.MechanismCSI, Phase: readmodel.PhaseDetachBlocked,
				UniqueName: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-old", VolumeAttachment: "csi-old", Since: at(-5 * time.Minute),
				Reason: "the kubelet reports the volume in use"},
			{Node: "node-d", Pod: "db/pg-2", Volume: "data", PV: "pv-d", Plugin: gce, Driver: gceCSI, Mechanism: migration.MechanismWait,
				Phase: readmodel.PhaseHeld, Retries: 5, NextRetry: at(10 * time.Second), Since: at(-5 * time.Minute),
				Reason: `CSINode "node-d" does not exist yet, so adc cannot tell whether kubernetes.io/gce-pd is migrated on node "node-d"`},
		},
		Ops: []readmodel.Operation{
			{Kind: readmodel.OperationAttach, Node: "node-b", Volume: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-b", Plugin: gce, Mechanism: migration.MechanismCSI,
				Migrated: true, Started: at(-20 * time.Second), Duration: 300 * time.Millisecond, Err: "rpc error: code = Internal desc = " + Script},
			{Kind: readmodel.OperationDetach, Node: "node-c", Volume: "kubernetes.io/csi/nfs.csi.k8s.io^old", Plugin: readmodel.CSIPluginLabel("nfs.csi.k8s.io"),
				Mechanism: migration.MechanismCSI, Started: at(-40 * time.Second), Duration: 2 * time.Second},
			{Kind: readmodel.OperationAttach, Node: "node-a", Volume: "kubernetes.io/csi/pd.csi.storage.gke.io^disk-a", Plugin: gce, Mechanism: migration.MechanismCSI,
				Migrated: true, Started: at(-60 * time.Second), Duration: 1500 * time.Millisecond},
		},
		Flips: []readmodel.NodeFlip{
			{Time: at(-5 * time.Second), Node: "node-b", Plugin: gce, Migrated: true},
			{Time: at(-90 * time.Second), Node: "node-c" + Script, Plugin: gce, Migrated: false},
		},
	}
}
