// Package smoke checks that the test control plane is the version adc targets and that the
// storage APIs adc depends on round-trip field by field.
package smoke

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/test/integration/framework"
)

func TestServerVersion(t *testing.T) {
	cp := framework.Get(t)
	info, err := cp.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading /version: %v", err)
	}
	if info.GitVersion != "v"+framework.KubernetesVersion {
		t.Fatalf("control plane reports %q, want v%s; rebuild with `make clean envtest-assets`", info.GitVersion, framework.KubernetesVersion)
	}
	t.Logf("test control plane: kube-apiserver %s (%s/%s)", info.GitVersion, info.Major, info.Minor)
}

func TestCSINodeRoundTrip(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	nodes := cp.Client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "smoke-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { _ = nodes.Delete(ctx, node.Name, metav1.DeleteOptions{}) })

	want := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:        node.Name,
			Annotations: map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name:         "pd.csi.storage.gke.io",
			NodeID:       "projects/p/zones/z/instances/smoke-node",
			TopologyKeys: []string{"topology.gke.io/zone"},
			Allocatable:  &storagev1.VolumeNodeResources{Count: ptr.To[int32](16)},
		}}},
	}
	api := cp.Client.StorageV1().CSINodes()
	if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CSINode: %v", err)
	}
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CSINode back: %v", err)
	}
	if g, w := got.Annotations["storage.alpha.kubernetes.io/migrated-plugins"], want.Annotations["storage.alpha.kubernetes.io/migrated-plugins"]; g != w {
		t.Errorf("migrated-plugins annotation = %q, want %q", g, w)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != node.UID || got.OwnerReferences[0].Kind != "Node" {
		t.Errorf("owner references = %+v, want the Node %s", got.OwnerReferences, node.UID)
	}
	if len(got.Spec.Drivers) != 1 {
		t.Fatalf("drivers = %+v, want one", got.Spec.Drivers)
	}
	d, wd := got.Spec.Drivers[0], want.Spec.Drivers[0]
	if d.Name != wd.Name || d.NodeID != wd.NodeID || len(d.TopologyKeys) != 1 || d.TopologyKeys[0] != wd.TopologyKeys[0] {
		t.Errorf("driver = %+v, want %+v", d, wd)
	}
	if d.Allocatable == nil || d.Allocatable.Count == nil || *d.Allocatable.Count != 16 {
		t.Errorf("allocatable = %+v, want count 16", d.Allocatable)
	}
	deleteAndConfirm(t, "CSINode", func() error { return api.Delete(ctx, want.Name, metav1.DeleteOptions{}) },
		func() error { _, err := api.Get(ctx, want.Name, metav1.GetOptions{}); return err })
}

func TestCSIDriverRoundTrip(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	want := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: "no-attach.csi.example.com"},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			PodInfoOnMount:       ptr.To(true),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
	api := cp.Client.StorageV1().CSIDrivers()
	if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CSIDriver: %v", err)
	}
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CSIDriver back: %v", err)
	}
	if got.Spec.AttachRequired == nil || *got.Spec.AttachRequired {
		t.Errorf("attachRequired = %v, want false", got.Spec.AttachRequired)
	}
	if got.Spec.PodInfoOnMount == nil || !*got.Spec.PodInfoOnMount {
		t.Errorf("podInfoOnMount = %v, want true", got.Spec.PodInfoOnMount)
	}
	if len(got.Spec.VolumeLifecycleModes) != 1 || got.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("volumeLifecycleModes = %v, want [Persistent]", got.Spec.VolumeLifecycleModes)
	}
	deleteAndConfirm(t, "CSIDriver", func() error { return api.Delete(ctx, want.Name, metav1.DeleteOptions{}) },
		func() error { _, err := api.Get(ctx, want.Name, metav1.GetOptions{}); return err })
}

func TestVolumeAttachmentRoundTrip(t *testing.T) {
	cp := framework.Get(t)
	ctx := t.Context()
	want := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-0123456789abcdef"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "pd.csi.storage.gke.io",
			NodeName: "smoke-node",
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-smoke")},
		},
	}
	api := cp.Client.StorageV1().VolumeAttachments()
	if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating VolumeAttachment: %v", err)
	}
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading VolumeAttachment back: %v", err)
	}
	if got.Spec.Attacher != want.Spec.Attacher || got.Spec.NodeName != want.Spec.NodeName {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}
	if got.Spec.Source.PersistentVolumeName == nil || *got.Spec.Source.PersistentVolumeName != "pv-smoke" || got.Spec.Source.InlineVolumeSpec != nil {
		t.Errorf("source = %+v, want persistentVolumeName pv-smoke", got.Spec.Source)
	}

	// The status subresource is what a CSI external-attacher writes.
	got.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/sdb"}}
	if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating VolumeAttachment status: %v", err)
	}
	got, err = api.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading VolumeAttachment back: %v", err)
	}
	if !got.Status.Attached || got.Status.AttachmentMetadata["devicePath"] != "/dev/sdb" {
		t.Errorf("status = %+v, want attached with devicePath /dev/sdb", got.Status)
	}
	deleteAndConfirm(t, "VolumeAttachment", func() error { return api.Delete(ctx, want.Name, metav1.DeleteOptions{}) },
		func() error { _, err := api.Get(ctx, want.Name, metav1.GetOptions{}); return err })
}

// deleteAndConfirm deletes an object and checks a read afterwards reports NotFound.
func deleteAndConfirm(t *testing.T, kind string, del, get func() error) {
	t.Helper()
	if err := del(); err != nil {
		t.Fatalf("deleting %s: %v", kind, err)
	}
	if err := get(); !apierrors.IsNotFound(err) {
		t.Fatalf("reading deleted %s: got %v, want NotFound", kind, err)
	}
}
