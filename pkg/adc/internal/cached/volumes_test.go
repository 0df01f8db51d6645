package cached

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCachedPVRebuildsTheTrimmedVolume proves the compact PersistentVolume loses nothing the
// trimmed one has, whatever its source, including a malformed one with two sources or none.
func TestCachedPVRebuildsTheTrimmedVolume(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "pv-1", UID: "uid-pv-1", ResourceVersion: "9",
		Labels:      map[string]string{"topology.kubernetes.io/zone": "us-east-1a"},
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}}
	spec := v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ClaimRef:                      &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "uid-data"},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		StorageClassName:              "gp3",
		MountOptions:                  []string{"noatime"},
		VolumeMode:                    ptr.To(v1.PersistentVolumeFilesystem),
		NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}}}},
		VolumeAttributesClassName: ptr.To("fast"),
	}
	withSource := func(s v1.PersistentVolumeSource) v1.PersistentVolume {
		pv := v1.PersistentVolume{ObjectMeta: meta, Spec: *spec.DeepCopy(),
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound, LastPhaseTransitionTime: ptr.To(metav1.Now())}}
		pv.Spec.PersistentVolumeSource = s
		return pv
	}
	cases := map[string]v1.PersistentVolume{
		"csi": withSource(v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1",
			FSType: "ext4", VolumeAttributes: map[string]string{"a": "b"}, NodePublishSecretRef: &v1.SecretReference{Name: "s"}}}),
		"csi without a handle": withSource(v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com"}}),
		"gce-pd":               withSource(v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}}),
		"aws-ebs":              withSource(v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-2"}}),
		"portworx":             withSource(v1.PersistentVolumeSource{PortworxVolume: &v1.PortworxVolumeSource{VolumeID: "px-1"}}),
		"no source":            withSource(v1.PersistentVolumeSource{}),
		"two sources":          withSource(v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d"}, NFS: &v1.NFSVolumeSource{Server: "s"}}),
		"bare pre-v1.0 pv":     {ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
	}
	for name, pv := range cases {
		t.Run(name, func(t *testing.T) {
			trimmed, cached := checkCompactForm[v1.PersistentVolume, *cachedPV](t, &pv, PVOf)
			if got := PVCSISource(cached); !reflect.DeepEqual(got, trimmed.Spec.CSI) {
				t.Errorf("CSI source read from the cache %+v, from the volume %+v", got, trimmed.Spec.CSI)
			}
		})
	}
}

// TestCachedClaimRebuildsTheTrimmedClaim: a claim keeps identity, owners, volume name and
// phase, which is all migration.PodVolumes reads.
func TestCachedClaimRebuildsTheTrimmedClaim(t *testing.T) {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-scratch", UID: "uid-c", ResourceVersion: "3",
			OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "p", UID: "uid-p", Controller: ptr.To(true)}}},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To("gp3"),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
	}
	trimmed, _ := checkCompactForm[v1.PersistentVolumeClaim, *cachedClaim](t, pvc, ClaimOf)
	if trimmed.Spec.VolumeName != "pv-1" || trimmed.Status.Phase != v1.ClaimBound || len(trimmed.OwnerReferences) != 1 {
		t.Errorf("trimmed claim lost what adc reads: %+v", trimmed)
	}
}

// TestCachedPVKnowsEverySpecField fails when a Kubernetes upgrade adds a field to
// PersistentVolumeSpec that cachedPV does not carry: compactPV would silently drop it.
func TestCachedPVKnowsEverySpecField(t *testing.T) {
	known := map[string]bool{"PersistentVolumeSource": true, "Capacity": true, "AccessModes": true, "ClaimRef": true,
		"PersistentVolumeReclaimPolicy": true, "StorageClassName": true, "MountOptions": true, "VolumeMode": true,
		"NodeAffinity": true, "VolumeAttributesClassName": true}
	st := reflect.TypeOf(v1.PersistentVolumeSpec{})
	for i := 0; i < st.NumField(); i++ {
		if f := st.Field(i).Name; !known[f] {
			t.Errorf("PersistentVolumeSpec.%s is new: carry it in cachedPV (compactPV, pv) and add it here", f)
		}
	}
}
