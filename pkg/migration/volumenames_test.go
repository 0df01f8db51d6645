package migration

import "testing"

func TestNamesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Decision
		want VolumeNames
	}{
		{"csi keeps the decided VolumeAttachment name", Decision{Mechanism: MechanismCSI, Driver: "d", VolumeHandle: "h", VolumeAttachmentName: "csi-x"},
			VolumeNames{VolumeAttachment: "csi-x", CSIUnique: "kubernetes.io/csi/d^h"}},
		{"wait still knows every name of a migrated volume", Decision{Mechanism: MechanismWait, Driver: "d", VolumeHandle: "h", InTreeUniqueName: "kubernetes.io/gce-pd/a"},
			VolumeNames{VolumeAttachment: VolumeAttachmentName("h", "d", "n"), CSIUnique: "kubernetes.io/csi/d^h", InTreeUnique: "kubernetes.io/gce-pd/a"}},
		{"in-tree without translation", Decision{Mechanism: MechanismInTree, UniqueName: "kubernetes.io/iscsi/p"},
			VolumeNames{InTreeUnique: "kubernetes.io/iscsi/p"}},
		{"an error knows no name", Decision{Mechanism: MechanismError}, VolumeNames{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NamesOf(&tc.d, "n"); got != tc.want {
				t.Errorf("NamesOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
