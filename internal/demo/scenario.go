// Package demo runs adc on a local control plane seeded with a realistic mid-rollout
// cluster, for `adc-demo`: several in-tree plugins and native CSI drivers; nodes migrated,
// not migrated, and one whose CSINode arrives late; a driver that needs no attach;
// ReadWriteOnce and ReadWriteMany volumes; an inline volume. The external-attacher, the
// kubelet registration and the in-tree attacher are simulators from test/simulator.
package demo

import (
	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// Namespace holds the demo's workloads.
const Namespace = "rollout-demo"

// node is one seeded node and what its (simulated) kubelet reports.
type node struct {
	name string
	// migrated is the CSINode annotation; "-" means the CSINode arrives late.
	migrated string
	drivers  []string
}

// nodes register the CSI drivers their pods' volumes go through: adc attaches nothing
// through a driver the node's CSINode does not list.
var nodes = []node{
	{name: "gke-pool-a-1", migrated: "kubernetes.io/aws-ebs,kubernetes.io/gce-pd", drivers: []string{"pd.csi.storage.gke.io", "ebs.csi.aws.com", "disk.csi.example.com", "files.csi.example.com"}},
	{name: "gke-pool-a-2", migrated: "kubernetes.io/aws-ebs,kubernetes.io/gce-pd", drivers: []string{"pd.csi.storage.gke.io", "ebs.csi.aws.com", "disk.csi.example.com", "files.csi.example.com", "hostpath.csi.k8s.io"}},
	{name: "legacy-pool-1", migrated: "", drivers: []string{"pxd.portworx.com"}},
	{name: "new-pool-1", migrated: "-", drivers: []string{"ebs.csi.aws.com"}},
}

// lateNode is the node whose kubelet registers its CSINode after the controller started.
const lateNode = "new-pool-1"

// volumeKind says how a demo volume is backed.
type volumeKind int

const (
	gcePD volumeKind = iota
	awsEBS
	portworx
	nativeCSI
	inlineGCE
	configMap
)

// workload is one pod with one volume, and how adc should end up treating it.
type workload struct {
	pod, node string
	kind      volumeKind
	// claim names the PV/claim; pods sharing a claim share the volume.
	claim  string
	driver string // native CSI driver
	modes  []v1.PersistentVolumeAccessMode
	// want is the expected final mechanism and phase; wantAlt is an accepted alternative
	// (for the ReadWriteOnce volume, whichever pod comes second waits).
	want, wantAlt expectation
}

// expectation is Expectation (story.go), short for the table below.
type expectation = Expectation

var (
	rwo = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	rwx = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}

	attachedCSI    = expectation{migration.MechanismCSI, readmodel.PhaseAttached}
	attachedInTree = expectation{migration.MechanismInTree, readmodel.PhaseAttached}
	noAttach       = expectation{migration.MechanismCSINoAttach, readmodel.PhaseNotNeeded}
	notAttachable  = expectation{migration.MechanismNotAttachable, readmodel.PhaseNotNeeded}
	multiAttach    = expectation{migration.MechanismCSI, readmodel.PhaseMultiAttach}
)

var workloads = []workload{
	{pod: "web-0", node: "gke-pool-a-1", kind: gcePD, claim: "web-0", modes: rwo, want: attachedCSI},
	{pod: "web-1", node: "legacy-pool-1", kind: gcePD, claim: "web-1", modes: rwo, want: attachedInTree},
	{pod: "db-0", node: "gke-pool-a-2", kind: awsEBS, claim: "db-0", modes: rwo, want: attachedCSI},
	{pod: "db-1", node: lateNode, kind: awsEBS, claim: "db-1", modes: rwo, want: attachedCSI},
	{pod: "px-0", node: "legacy-pool-1", kind: portworx, claim: "px-0", modes: rwo, want: attachedCSI},
	{pod: "cache-0", node: "gke-pool-a-1", kind: nativeCSI, claim: "cache-0", driver: "disk.csi.example.com", modes: rwo, want: attachedCSI},
	{pod: "scratch-0", node: "gke-pool-a-2", kind: nativeCSI, claim: "scratch-0", driver: "hostpath.csi.k8s.io", modes: rwo, want: noAttach},
	{pod: "shared-0", node: "gke-pool-a-1", kind: nativeCSI, claim: "shared", driver: "files.csi.example.com", modes: rwx, want: attachedCSI},
	{pod: "shared-1", node: "gke-pool-a-2", kind: nativeCSI, claim: "shared", driver: "files.csi.example.com", modes: rwx, want: attachedCSI},
	{pod: "report-0", node: "gke-pool-a-1", kind: nativeCSI, claim: "report", driver: "disk.csi.example.com", modes: rwo, want: attachedCSI, wantAlt: multiAttach},
	{pod: "report-1", node: "gke-pool-a-2", kind: nativeCSI, claim: "report", driver: "disk.csi.example.com", modes: rwo, want: attachedCSI, wantAlt: multiAttach},
	{pod: "batch-0", node: "gke-pool-a-2", kind: inlineGCE, claim: "batch-disk", want: attachedCSI},
	{pod: "settings-0", node: "legacy-pool-1", kind: configMap, want: notAttachable},
}

// noAttachDrivers are the CSI drivers whose CSIDriver says attachRequired: false.
var noAttachDrivers = []string{"hostpath.csi.k8s.io"}

// Migration is the demo controller's configuration: migration on for every plugin (the
// default) except Portworx, whose migration is complete.
func Migration() migration.Config {
	return migration.DefaultConfig().WithModes(map[string]migration.Mode{"kubernetes.io/portworx-volume": migration.ModeComplete})
}
