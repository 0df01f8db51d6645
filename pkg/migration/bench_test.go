package migration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkDecideCSIPV is the controller's hot path on a modern cluster: a native CSI PV
// whose driver has a CSIDriver object requiring attach.
func BenchmarkDecideCSIPV(b *testing.B) {
	cfg := DefaultConfig()
	in := &Input{
		PV:         csiPV("pv-bench", "ebs.csi.aws.com", "vol-0123456789abcdef0"),
		NodeName:   "ip-10-0-1-23.ec2.internal",
		CSINode:    csiNodeWith(allMigrated),
		CSIDrivers: withDriver("ebs.csi.aws.com", boolPtr(true)),
	}
	b.ReportAllocs()
	var d Decision
	for b.Loop() {
		d = Decide(&cfg, in)
	}
	if d.Mechanism != MechanismCSI {
		b.Fatalf("mechanism %s: %s", d.Mechanism, d.Reason)
	}
}

// BenchmarkDecideMigratedGCEPDPV is an in-tree GCE PD PV on a node whose CSINode reports the
// plugin migrated (mode on): node lookup plus csi-translation-lib's translation.
func BenchmarkDecideMigratedGCEPDPV(b *testing.B) {
	cfg := DefaultConfig()
	in := &Input{
		PV:         gcePV("pv-bench", "pd-bench", "us-central1-a"),
		NodeName:   "gke-pool-1-abcd",
		CSINode:    csiNodeWith(allMigrated),
		CSIDrivers: withDriver(gceDriver, boolPtr(true)),
	}
	b.ReportAllocs()
	var d Decision
	for b.Loop() {
		d = Decide(&cfg, in)
	}
	if d.Mechanism != MechanismCSI {
		b.Fatalf("mechanism %s: %s", d.Mechanism, d.Reason)
	}
}

// BenchmarkTranslateGCEPDLibraryOnly is the floor BenchmarkDecideMigratedGCEPDPV cannot go
// below: csi-translation-lib alone translating the same PV (deep copy, handle formatting,
// topology rewrite, access-mode rewrite).
func BenchmarkTranslateGCEPDLibraryOnly(b *testing.B) {
	pv := gcePV("pv-bench", "pd-bench", "us-central1-a")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translator.TranslateInTreePVToCSI(discardLogger, pv); err != nil {
			b.Fatal(err)
		}
	}
}

// realisticGCEPV is a GCE PD PV as an informer delivers it: finalizers, annotations, owner
// metadata, managed fields and status, none of which translation needs.
func realisticGCEPV() *v1.PersistentVolume {
	pv := gcePV("pvc-5b9d3c1e-8a4f-4f7e-9a51-1c2d3e4f5a6b", "pd-realistic", "us-central1-a")
	pv.Finalizers = []string{"kubernetes.io/pv-protection", "external-attacher/pd-csi-storage-gke-io"}
	pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/gce-pd", "pv.kubernetes.io/bound-by-controller": "yes"}
	pv.Labels[betaZoneLabel] = "us-central1-a"
	pv.Labels["topology.kubernetes.io/region"] = "us-central1"
	pv.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:pv.kubernetes.io/bound-by-controller":{},"f:pv.kubernetes.io/provisioned-by":{}},"f:finalizers":{".":{},"v:\"kubernetes.io/pv-protection\"":{}},"f:labels":{".":{},"f:topology.kubernetes.io/region":{},"f:topology.kubernetes.io/zone":{}}},"f:spec":{"f:accessModes":{},"f:capacity":{".":{},"f:storage":{}},"f:claimRef":{},"f:gcePersistentDisk":{".":{},"f:fsType":{},"f:pdName":{}},"f:nodeAffinity":{".":{},"f:required":{}},"f:persistentVolumeReclaimPolicy":{},"f:storageClassName":{},"f:volumeMode":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)},
	}
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("100Gi")}
	pv.Spec.StorageClassName = "standard"
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: zoneLabel, Operator: v1.NodeSelectorOpIn, Values: []string{"us-central1-a"}},
		{Key: "topology.kubernetes.io/region", Operator: v1.NodeSelectorOpIn, Values: []string{"us-central1"}},
	}}}}}
	pv.Status.Phase = v1.VolumeBound
	return pv
}

// BenchmarkDecideMigratedGCEPDPVRealistic is BenchmarkDecideMigratedGCEPDPV with a PV as the
// API server returns it (managed fields, finalizers, node affinity, status).
func BenchmarkDecideMigratedGCEPDPVRealistic(b *testing.B) {
	cfg := DefaultConfig()
	in := &Input{PV: realisticGCEPV(), NodeName: "gke-pool-1-abcd", CSINode: csiNodeWith(allMigrated), CSIDrivers: withDriver(gceDriver, boolPtr(true))}
	b.ReportAllocs()
	var d Decision
	for b.Loop() {
		d = Decide(&cfg, in)
	}
	if d.Mechanism != MechanismCSI {
		b.Fatalf("mechanism %s: %s", d.Mechanism, d.Reason)
	}
}

// BenchmarkTranslateGCEPDLibraryOnlyRealistic is the library alone on the realistic PV.
func BenchmarkTranslateGCEPDLibraryOnlyRealistic(b *testing.B) {
	pv := realisticGCEPV()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translator.TranslateInTreePVToCSI(discardLogger, pv); err != nil {
			b.Fatal(err)
		}
	}
}
