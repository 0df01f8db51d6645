package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/simulator"
)

// driver is the CSI driver of every chaos volume; no CSIDriver object exists, so attach is
// required.
const driver = "chaos.csi.example.com"

// spareDriver is the CSI driver of the last chaosPVLess chaos volumes, the ones whose
// PersistentVolume the churn deletes under their VolumeAttachments. adc cannot tell which
// volume a VolumeAttachment of a deleted PersistentVolume is, so it detaches one only while
// its node reports no volume of the driver in use; with a driver of their own, few volumes
// per node, that happens while the PersistentVolume is gone, which is what the checker must
// see.
const spareDriver = "spare.csi.example.com"

// startControlPlane starts a control plane of the test's own whose kube-apiserver can be
// restarted, and stops it (removing everything) when the test ends.
func startControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cp, stop, err := controlplane.StartWithOptions(controlplane.Options{Restartable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return cp
}

// startChecker follows the control plane's etcd from now on with a checker for adc running
// with maxWait as --max-wait-for-unmount.
func startChecker(t *testing.T, cp *controlplane.ControlPlane, maxWait time.Duration) (*Checker, *EtcdFeed) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	checker := NewChecker(maxWait)
	feed, rev, err := StartEtcdFeed(ctx, cp.EtcdURL(), checker)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); feed.Close() })
	t.Logf("checker follows etcd %s from rev %d", cp.EtcdURL(), rev)
	return checker, feed
}

// volumePV is the chaos PersistentVolume i: ReadWriteOnce, CSI, handle h-<i>, of driver
// (spareDriver for the last chaosPVLess of chaosVolumes).
func volumePV(i int) *v1.PersistentVolume {
	d := driver
	if i >= chaosVolumes-chaosPVLess {
		d = spareDriver
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v-%03d", i)},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: d, VolumeHandle: fmt.Sprintf("h-%03d", i)}},
		},
	}
}

// createVolumes creates n ReadWriteOnce CSI PersistentVolumes with claims c-<i> bound to
// them in namespace.
func createVolumes(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, namespace string, n int) {
	t.Helper()
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	for i := 0; i < n; i++ {
		if _, err := simulator.BindNewClaim(ctx, cp.Client, namespace, fmt.Sprintf("c-%03d", i), volumePV(i)); err != nil {
			t.Fatal(err)
		}
	}
}

// podFor is a pod on node using claim.
func podFor(name, namespace, node, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// inlineDisk is the gce-pd disk of inline volume slot i.
func inlineDisk(i int) string { return fmt.Sprintf("chaos-disk-%03d", i) }

// inlinePodFor is a pod on node with an inline gcePersistentDisk volume of disk: on a node
// that migrated gce-pd, adc attaches it through pd.csi.storage.gke.io with a VolumeAttachment
// carrying spec.source.inlineVolumeSpec and no PersistentVolume.
func inlinePodFor(name, namespace, node, disk string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{
				GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: disk, FSType: "ext4"}}}},
		},
	}
}

// reportViolations logs the counts and fails the test on any violation, with examples.
func reportViolations(t *testing.T, checker *Checker, feed *EtcdFeed) []Violation {
	t.Helper()
	violations := checker.Violations()
	t.Logf("checker: %d etcd events read; %s", feed.Events(), Summary(checker.Counts(), violations))
	return violations
}
