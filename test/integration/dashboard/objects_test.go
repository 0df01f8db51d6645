package dashboard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/migration-aware/adc/test/simulator"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// boundClaim creates a ReadWriteOnce PV (zone us-central1-a) and a claim bound to it, as the
// PV controller would (envtest runs none), and returns the claim's name.
func boundClaim(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name string, src v1.PersistentVolumeSource) string {
	t.Helper()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: "us-central1-a"}},
		Spec:       v1.PersistentVolumeSpec{PersistentVolumeSource: src},
	}
	if _, err := simulator.BindNewClaim(ctx, client, ns, name, pv); err != nil {
		t.Fatal(err)
	}
	return name
}

// createPod creates a pod scheduled to node with one volume per claim plus extra volumes.
func createPod(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name, node string, claims []string, extra ...v1.Volume) {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	for i, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: fmt.Sprintf("data-%d", i),
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, extra...)
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// cleanup deletes the test's pods, nodes, CSINodes, VolumeAttachments and PersistentVolumes.
func cleanup(t *testing.T, client kubernetes.Interface, ns string, nodes []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	logErr := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: %s: %v", what, err)
		}
	}
	logErr("pods", client.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{}))
	ours := map[string]bool{}
	for _, n := range nodes {
		ours[n] = true
	}
	if vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		for _, va := range vas.Items {
			if ours[va.Spec.NodeName] {
				logErr("VolumeAttachment "+va.Name, client.StorageV1().VolumeAttachments().Delete(ctx, va.Name, del))
			}
		}
	}
	for _, n := range nodes {
		logErr("CSINode "+n, client.StorageV1().CSINodes().Delete(ctx, n, del))
		logErr("node "+n, client.CoreV1().Nodes().Delete(ctx, n, del))
	}
	if pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
				logErr("PV "+pv.Name, client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, del))
			}
		}
	}
}

// setKubeletVersion writes the node's status.nodeInfo.kubeletVersion, as its kubelet would.
func setKubeletVersion(t *testing.T, ctx context.Context, client kubernetes.Interface, name, version string) {
	t.Helper()
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node %s: %v", name, err)
	}
	node.Status.NodeInfo.KubeletVersion = version
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the kubelet version of node %s: %v", name, err)
	}
}
