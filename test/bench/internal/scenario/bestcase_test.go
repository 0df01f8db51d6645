package scenario

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migration-aware/adc/pkg/migration"
)

// The best case plans from what it lists, as a controller does: a VolumeAttachment per pod
// volume, named as controllers name them, node by node, at most the limit; and it lists a
// node's volumes in one status write.
func TestBestCasePlansNodeByNode(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	for n := 2; n >= 0; n-- { // seeded out of order: the plan sorts
		node := nodeName(n)
		if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for p := 1; p >= 0; p-- {
			if err := seedPod(ctx, client, node, podName(node, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := planBestCase(ctx, client, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, va := range b.attachments {
		got = append(got, va.Spec.NodeName+"/"+*va.Spec.Source.PersistentVolumeName)
		pod := (*va.Spec.Source.PersistentVolumeName)[len("pv-"):]
		if want := migration.VolumeAttachmentName("vol-"+pod, Driver, va.Spec.NodeName); va.Name != want {
			t.Errorf("VolumeAttachment of %s is named %s, want %s", pod, va.Name, want)
		}
	}
	want := []string{"node-0000/pv-node-0000-pod-00", "node-0000/pv-node-0000-pod-01", "node-0001/pv-node-0001-pod-00",
		"node-0001/pv-node-0001-pod-01", "node-0002/pv-node-0002-pod-00"}
	if len(got) != len(want) {
		t.Fatalf("planned %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("create %d is %s, want %s", i, got[i], want[i])
		}
	}
	if b.pending[nodeName(2)] != 1 || b.pending[nodeName(0)] != 2 {
		t.Errorf("pending = %v, want 2, 2, 1 (the limit cuts node-0002)", b.pending)
	}

	b.writeStatus(ctx, nodeName(0))
	if err := b.failed(); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := node.Status.VolumesAttached
	if len(listed) != 2 || string(listed[0].Name) != uniqueNameOfPV("pv-node-0000-pod-00") || string(listed[1].Name) != uniqueNameOfPV("pv-node-0000-pod-01") {
		t.Errorf("node-0000 lists %v, want both its volumes", listed)
	}
}
