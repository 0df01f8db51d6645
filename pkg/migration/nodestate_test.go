package migration

import (
	"strings"
	"testing"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

func TestNodePluginMigration(t *testing.T) {
	csi := csinodeinfo.VolumePluginMechanismCSI
	inTree := csinodeinfo.VolumePluginMechanismInTree
	cases := []struct {
		name     string
		source   NodeSource
		node     NodeObjects
		want     NodeMigrationState
		evidence string
	}{
		{name: "csinode: listed", source: NodeSourceCSINode, node: NodeObjects{Name: testNode, CSINode: csiNodeWith(gcePlugin)}, want: NodeStateMigrated, evidence: "annotation"},
		{name: "csinode: not listed", source: NodeSourceCSINode, node: NodeObjects{Name: testNode, CSINode: csiNodeWith(awsPlugin)}, want: NodeStateNotMigrated},
		{name: "csinode: no annotation", source: NodeSourceCSINode, node: NodeObjects{Name: testNode, CSINode: csiNodeWith()}, want: NodeStateNotMigrated},
		{name: "csinode: absent", source: NodeSourceCSINode, node: NodeObjects{Name: testNode}, want: NodeStateUnknown, evidence: `CSINode "node-1" does not exist yet`},
		{name: "empty source means csinode", source: "", node: NodeObjects{Name: testNode}, want: NodeStateUnknown, evidence: `CSINode "node-1"`},
		{name: "csinodeinfo: csi and available", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csi))}, want: NodeStateMigrated},
		{name: "csinodeinfo: in-tree", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, inTree))}, want: NodeStateNotMigrated},
		{name: "csinodeinfo: unavailable", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, false, csi))}, want: NodeStateNotMigrated},
		{name: "csinodeinfo: unknown mechanism value", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, "csi-plugin"))}, want: NodeStateNotMigrated},
		{name: "csinodeinfo: other driver only", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(awsDriver, true, csi))}, want: NodeStateNotMigrated},
		{name: "csinodeinfo: no drivers", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo()}, want: NodeStateNotMigrated},
		{name: "csinodeinfo: absent", source: NodeSourceCSINodeInfo, node: NodeObjects{Name: testNode, CSINode: csiNodeWith(gcePlugin)}, want: NodeStateUnknown, evidence: `CSINodeInfo "node-1" does not exist yet`},
		{name: "auto: csinode wins", source: NodeSourceAuto, node: NodeObjects{Name: testNode, CSINode: csiNodeWith(), CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csi))}, want: NodeStateNotMigrated, evidence: "CSINode"},
		{name: "auto: csinodeinfo fallback", source: NodeSourceAuto, node: NodeObjects{Name: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csi))}, want: NodeStateMigrated, evidence: "CSINodeInfo"},
		{name: "auto: neither", source: NodeSourceAuto, node: NodeObjects{Name: testNode}, want: NodeStateUnknown, evidence: "neither"},
		{name: "invalid source", source: "bogus", node: NodeObjects{Name: testNode, CSINode: csiNodeWith(gcePlugin)}, want: NodeStateUnknown, evidence: `"bogus"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NodePluginMigration(tc.source, tc.node, gcePlugin, gceDriver)
			if got.State != tc.want {
				t.Errorf("State = %s, want %s (evidence %q)", got.State, tc.want, got.Evidence)
			}
			if got.Evidence == "" || !strings.Contains(got.Evidence, tc.evidence) {
				t.Errorf("Evidence = %q, want it to contain %q", got.Evidence, tc.evidence)
			}
		})
	}
}

func TestNodeMigrationStateString(t *testing.T) {
	for s, want := range map[NodeMigrationState]string{NodeStateMigrated: "migrated", NodeStateNotMigrated: "not-migrated", NodeStateUnknown: "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}
