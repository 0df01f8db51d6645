package migration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPVCSIIdentity(t *testing.T) {
	zone := map[string]string{v1.LabelTopologyZone: "us-central1-a"}
	for _, tc := range []struct {
		name                 string
		pv                   *v1.PersistentVolume
		wantDriver, wantHand string
		wantOK               bool
	}{
		{"nil", nil, "", "", false},
		{"native csi", &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}, "d", "h", true},
		{"csi without handle", &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: "d"}}}}, "d", "", false},
		{"gce pd translates", &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: zone}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk"}}}}, "pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/us-central1-a/disks/disk", true},
		{"aws ebs translates", &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1"}}}}, "ebs.csi.aws.com", "vol-1", true},
		{"nfs has no csi identity", &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, h, ok := PVCSIIdentity(tc.pv)
			if d != tc.wantDriver || h != tc.wantHand || ok != tc.wantOK {
				t.Errorf("PVCSIIdentity = (%q, %q, %v), want (%q, %q, %v)", d, h, ok, tc.wantDriver, tc.wantHand, tc.wantOK)
			}
		})
	}
}

// Every decision of an attachable in-tree volume carries its in-tree unique name, whatever
// the mechanism, so the controller recognises an attachment made before a migration flip.
func TestDecisionCarriesInTreeUniqueName(t *testing.T) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{v1.LabelTopologyZone: "z1"}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk"}}}}
	csiNode := func(migrated string) *Input {
		in := &Input{PV: pv, NodeName: testNode}
		if migrated != "-" {
			in.CSINode = csiNodeWith(migrated)
		}
		return in
	}
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name string
		in   *Input
		mech Mechanism
	}{
		{"migrated node", csiNode("kubernetes.io/gce-pd"), MechanismCSI},
		{"not migrated node", csiNode(""), MechanismInTree},
		{"node not reported", csiNode("-"), MechanismWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(&cfg, tc.in)
			if d.Mechanism != tc.mech || d.InTreeUniqueName != "kubernetes.io/gce-pd/disk" {
				t.Errorf("mechanism %s, InTreeUniqueName %q; want %s and kubernetes.io/gce-pd/disk (%s)", d.Mechanism, d.InTreeUniqueName, tc.mech, d.Reason)
			}
		})
	}
}

func TestMigratedPluginOf(t *testing.T) {
	gce := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "d"}}}}
	native := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "h"}}}}
	for _, tc := range []struct {
		name   string
		pv     *v1.PersistentVolume
		inline bool
		driver string
		want   string
		wantOK bool
	}{
		{"in-tree GCE PD PV", gce, false, "pd.csi.storage.gke.io", "kubernetes.io/gce-pd", true},
		{"native CSI PV of the same driver", native, false, "pd.csi.storage.gke.io", "", false},
		{"inline volume of a migrated plugin", nil, true, "ebs.csi.aws.com", "kubernetes.io/aws-ebs", true},
		{"inline volume of an unknown driver", nil, true, "csi.example.com", "", false},
		{"PV not known", nil, false, "pd.csi.storage.gke.io", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MigratedPluginOf(tc.pv, tc.inline, tc.driver)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("MigratedPluginOf = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
