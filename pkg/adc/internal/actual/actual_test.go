package actual

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

func TestIdentify(t *testing.T) {
	csi := migration.Decision{Mechanism: migration.MechanismCSI, Driver: "d", VolumeHandle: "h", VolumeAttachmentName: "csi-x"}
	wait := migration.Decision{Mechanism: migration.MechanismWait, Driver: "pd.csi.storage.gke.io", VolumeHandle: "projects/UNSPECIFIED/zones/z/disks/a", InTreeUniqueName: "kubernetes.io/gce-pd/a"}
	inTree := migration.Decision{Mechanism: migration.MechanismInTree, UniqueName: "kubernetes.io/iscsi/p:iqn:0"}
	for _, tc := range []struct {
		name   string
		d      migration.Decision
		pvName string
		want   Identity
	}{
		{"csi keeps the decided VolumeAttachment name", csi, "pv1", Identity{VA: "csi-x", CSIUnique: "kubernetes.io/csi/d^h", SourceKey: "pv:pv1"}},
		{"wait still knows every name of the volume", wait, "", Identity{
			VA:           migration.VolumeAttachmentName("projects/UNSPECIFIED/zones/z/disks/a", "pd.csi.storage.gke.io", "n"),
			CSIUnique:    "kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/z/disks/a",
			InTreeUnique: "kubernetes.io/gce-pd/a",
			SourceKey:    "inline:pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/z/disks/a"}},
		{"in-tree without translation", inTree, "", Identity{InTreeUnique: "kubernetes.io/iscsi/p:iqn:0", SourceKey: "intree:kubernetes.io/iscsi/p:iqn:0"}},
		{"error with only a PV name", migration.Decision{Mechanism: migration.MechanismError}, "pv9", Identity{SourceKey: "pv:pv9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Identify(&tc.d, tc.pvName, "n"); got != tc.want {
				t.Errorf("Identify = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestIndexFind(t *testing.T) {
	va := &Attachment{VA: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-a"}}, SourceKey: "pv:p1", UniqueName: "kubernetes.io/csi/d^h"}
	it := &Attachment{InTree: &memory.InTreeAttachment{}, UniqueName: "kubernetes.io/gce-pd/disk", SourceKey: "intree:kubernetes.io/gce-pd/disk"}
	x := NewIndex([]*Attachment{va, it})
	for _, tc := range []struct {
		name string
		id   Identity
		want *Attachment
	}{
		{"by VolumeAttachment name", Identity{VA: "csi-a"}, va},
		{"by CSI unique name", Identity{CSIUnique: "kubernetes.io/csi/d^h"}, va},
		{"migration flip finds the in-tree attachment", Identity{VA: "csi-other", CSIUnique: "kubernetes.io/csi/pd^x", InTreeUnique: "kubernetes.io/gce-pd/disk"}, it},
		{"held pair with only its PV name keeps the attachment", Identity{SourceKey: "pv:p1"}, va},
		{"unknown volume", Identity{VA: "csi-b", SourceKey: "pv:p2"}, nil},
		{"empty identity matches nothing", Identity{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := x.Find(tc.id); got != tc.want {
				t.Errorf("Find = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVolumeInUse(t *testing.T) {
	node := &v1.Node{Status: v1.NodeStatus{VolumesInUse: []v1.UniqueVolumeName{"kubernetes.io/csi/d^h1", "kubernetes.io/gce-pd/disk"}}}
	for _, tc := range []struct {
		name string
		a    *Attachment
		want bool
	}{
		{"listed csi volume", &Attachment{UniqueName: "kubernetes.io/csi/d^h1"}, true},
		{"listed in-tree volume", &Attachment{UniqueName: "kubernetes.io/gce-pd/disk"}, true},
		{"not listed", &Attachment{UniqueName: "kubernetes.io/csi/d^h2"}, false},
		{"unknown name, same driver in use: assume in use", &Attachment{Driver: "d"}, true},
		{"unknown name, driver not in use", &Attachment{Driver: "other"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := tc.a.InUseOn(node); got != tc.want {
				t.Errorf("InUseOn = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}
