package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/simulator"
)

// wrongActor is a deliberately broken attach/detach controller: it moves a volume to a new
// node by creating the new VolumeAttachment first (multi-attach) and deletes the old one
// while the old node still lists it and reports it in use (detach while in use, wrong order).
// It exists to prove the checker catches what adc must never do.
func wrongActor(ctx context.Context, c kubernetes.Interface, pv, from, to string) error {
	h := "h-" + pv[len("v-"):]
	if _, err := c.StorageV1().VolumeAttachments().Create(ctx, newVA(pv, h, to), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("wrong actor: attaching %s to %s: %w", pv, to, err)
	}
	if err := c.StorageV1().VolumeAttachments().Delete(ctx, VAName(h, driver, from), metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("wrong actor: detaching %s from %s: %w", pv, from, err)
	}
	return nil
}

func newVA(pv, handle, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: VAName(handle, driver, node)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
	}
}

// The checker, reading etcd, reports each invariant the wrong actor breaks, and nothing for a
// correct detach beside it.
func TestChaosCheckerCatchesWrongActor(t *testing.T) {
	cp := startControlPlane(t)
	ctx := t.Context()
	checker, feed := startChecker(t, cp, 5*time.Second)
	createVolumes(ctx, t, cp, "selftest", 2)
	kubelet := simulator.Kubelet{Client: cp.Client}
	for _, n := range []string{"n-a", "n-b"} {
		if _, err := kubelet.RegisterNode(ctx, n, true); err != nil {
			t.Fatal(err)
		}
	}
	// v-000 is attached, listed and in use on n-a; v-001 is attached on n-a but already out
	// of node status and not in use: deleting it is a correct detach.
	u0 := uniqueName(driver, "h-000")
	for _, va := range []*storagev1.VolumeAttachment{newVA("v-000", "h-000", "n-a"), newVA("v-001", "h-001", "n-a")} {
		if _, err := cp.Client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := fmt.Sprintf(`{"status":{"volumesAttached":[{"name":%q,"devicePath":""}],"volumesInUse":[%q]}}`, u0, u0)
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, "n-a", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.StorageV1().VolumeAttachments().Delete(ctx, VAName("h-001", driver, "n-a"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wrongActor(ctx, cp.Client, "v-000", "n-a", "n-b"); err != nil {
		t.Fatal(err)
	}

	var got map[string]int
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := feed.CatchUp(ctx, 5*time.Second); err != nil {
			return false, err
		}
		got = map[string]int{}
		for _, v := range checker.Violations() {
			got[v.Invariant]++
		}
		return got[DetachWhileInUse] > 0 && got[DetachOrder] > 0 && got[MultiAttach] > 0, nil
	}); err != nil {
		t.Fatalf("the checker missed the wrong actor: %v; violations %v", err, checker.Violations())
	}
	violations := reportViolations(t, checker, feed)
	for _, v := range violations {
		t.Logf("caught, as it should: %s", v)
	}
	if got[DetachWhileInUse] != 1 || got[DetachOrder] != 1 || got[MultiAttach] != 1 {
		t.Errorf("violations per invariant %v, want exactly one each (the correct detach of v-001 must not count)", got)
	}
	if c := checker.Counts(); c[DetachOrder] != 2 || c[MultiAttach] != 3 {
		t.Errorf("checks %v, want 2 detaches and 3 creates checked", c)
	}
	if err := feed.Err(); err != nil {
		t.Fatal(err)
	}
}
