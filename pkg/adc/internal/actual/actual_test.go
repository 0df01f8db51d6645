package actual

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
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
		{"csi: the unique volume name is the key", csi, "pv1", Identity{Volume: "kubernetes.io/csi/d^h", VA: "csi-x", PVName: "pv1"}},
		{"wait still knows every name of the volume", wait, "", Identity{
			Volume:     "kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/zones/z/disks/a",
			InTreeName: "kubernetes.io/gce-pd/a",
			VA:         migration.VolumeAttachmentName("projects/UNSPECIFIED/zones/z/disks/a", "pd.csi.storage.gke.io", "n")}},
		{"in-tree without translation", inTree, "", Identity{Volume: "kubernetes.io/iscsi/p:iqn:0", InTreeName: "kubernetes.io/iscsi/p:iqn:0"}},
		{"error with only a PV name", migration.Decision{Mechanism: migration.MechanismError}, "pv9", Identity{PVName: "pv9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Identify(&tc.d, tc.pvName, "n"); got != tc.want {
				t.Errorf("Identify = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestIndexFind(t *testing.T) {
	va := &Attachment{VA: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-a"}}, PVName: "p1", UniqueName: "kubernetes.io/csi/d^h", Volume: "kubernetes.io/csi/d^h"}
	it := &Attachment{InTree: &attachstate.InTreeAttachment{}, UniqueName: "kubernetes.io/gce-pd/disk", Volume: "kubernetes.io/gce-pd/disk"}
	x := NewIndex([]*Attachment{va, it})
	for _, tc := range []struct {
		name string
		id   Identity
		want *Attachment
	}{
		{"by unique volume name", Identity{Volume: "kubernetes.io/csi/d^h"}, va},
		{"another PersistentVolume of the same disk", Identity{Volume: "kubernetes.io/csi/d^h", PVName: "p2"}, va},
		{"by VolumeAttachment name", Identity{Volume: "kubernetes.io/csi/d^other", VA: "csi-a"}, va},
		{"migration flip finds the in-tree attachment", Identity{Volume: "kubernetes.io/csi/pd^x", InTreeName: "kubernetes.io/gce-pd/disk"}, it},
		{"held pair with only its PV name keeps the attachment", Identity{PVName: "p1"}, va},
		{"a named volume is not found by its PV name", Identity{Volume: "kubernetes.io/csi/d^h2", PVName: "p1"}, nil},
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
		{"unknown name, its VolumeAttachment name finds it in use", &Attachment{Driver: "d", VA: vaOf("h1", "n")}, true},
		{"unknown name, another volume of its driver in use", &Attachment{Driver: "d", VA: vaOf("h3", "n")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := tc.a.InUseOn(node); got != tc.want {
				t.Errorf("InUseOn = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

// vaOf is the VolumeAttachment of volume d^handle on node, named as the kubelet names it.
func vaOf(handle, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(handle, "d", node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node}}
}
