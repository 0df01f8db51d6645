package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// One volume, one name (issue 41): a ReadWriteOnce disk is one volume however many
// PersistentVolumes name it. Two PVs of the same CSI driver and volumeHandle are the same
// disk, and kube-controller-manager's attach/detach controller, whose multi-attach check goes
// by the unique volume name kubernetes.io/csi/<driver>^<handle>, refuses to attach it to a
// second node while it is attached to a first: pod B waits in ContainerCreating with a
// Warning Event FailedAttachVolume "Multi-Attach error ...", and runs once pod A is gone and
// the disk detached from A's node. Two ways an administrator gets there:
//   - TestClusterOneDiskTwoPVs: a second PV is created for a disk a first PV (bound, in use)
//     still names;
//   - TestClusterOneDiskRecreatedPV: the PV in use is deleted (its pv-protection finalizer
//     removed by hand, as `kubectl patch` does; csi-attacher's finalizer keeps it Terminating
//     while its VolumeAttachment exists) and re-created under a new name for the same disk.
//
// In both, pod A runs on the group's first node with claim a; pod B is pinned to the second
// node with claim b, bound to the other PV of the same disk. For oneDiskWindow the test checks
// at every poll that no two VolumeAttachments of the disk (the handle resolved through
// spec.source.persistentVolumeName and the PV, or the inline spec) exist on two different
// nodes and that pod B is not Running, and that the Multi-Attach Event comes: reason
// FailedAttachVolume and the word Multi-Attach (kube-controller-manager goes on "Volume is
// already used by pod(s) a", adc "Volume is already exclusively attached to one node and
// can't be attached to another"). The recorder's watch checks the same over the whole
// scenario. Then pod A is deleted: pod B must run on the second node, the disk attached there
// only, the old VolumeAttachment deleted before the new one is created. csi-attacher reads the
// handle to detach from the PV, so the re-created variant leaves csi-attacher's own finalizer
// on the deleted PV: without it the old VolumeAttachment could not be detached in any mode.

// oneDiskGroup is the scenario's node group (its two nodes are shared by both variants: each
// has a disk of its own, and nothing here stops a node).
const oneDiskGroup = "onedisk"

// oneDiskWindow is how long pod B is watched waiting while pod A holds the disk.
const oneDiskWindow = 10 * time.Second

// multiAttachReason is the Event reason kube-controller-manager's attach/detach controller
// gives a refused attach (k8s.io/kubernetes/pkg/kubelet/events.FailedAttachVolume), and
// multiAttachWord the word of its message that says why.
const (
	multiAttachReason = "FailedAttachVolume"
	multiAttachWord   = "Multi-Attach"
)

// oneDisk is one run of the scenario: a namespace, its StorageClass, one disk, two nodes.
type oneDisk struct {
	what           string // figure prefix
	ns, class      string
	driver, handle string
	node1, node2   string
	// pvs are the PVs of the disk, by name (all have handle).
	pvs map[string]bool
}

func TestClusterOneDiskTwoPVs(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		runOneDisk(t, c, "twopv", "one disk, two PVs", func(ctx context.Context, t *testing.T, d *oneDisk) string {
			// The administrator creates a second PV for the disk pv-a still names.
			pvB := d.ns + "-pv-b"
			createBoundClaim(ctx, t, c, d, "b", pvB)
			return pvB
		})
	})
}

func TestClusterOneDiskRecreatedPV(t *testing.T) {
	forEachMode(t, func(t *testing.T, c *modeCluster) {
		runOneDisk(t, c, "recreate", "one disk, re-created PV", func(ctx context.Context, t *testing.T, d *oneDisk) string {
			client := c.stack.Client
			pvA := d.ns + "-pv-a"
			// The administrator deletes the PV in use and takes off the finalizer that holds
			// it (the PV protection controller's, while the PV is bound).
			if err := client.CoreV1().PersistentVolumes().Delete(ctx, pvA, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvA, metav1.GetOptions{})
				if err != nil {
					return err
				}
				pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == "kubernetes.io/pv-protection" })
				_, err = client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatalf("removing the pv-protection finalizer of PV %s: %v", pvA, err)
			}
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvA, metav1.GetOptions{})
			if err != nil {
				// csi-attacher finds the handle to detach through the PV: without it, the old
				// VolumeAttachment could never be detached, in any mode.
				t.Fatalf("PV %s gone once its pv-protection finalizer was removed (%v): csi-attacher's finalizer did not hold it", pvA, err)
			}
			t.Logf("PV %s deleted, Terminating, finalizers %v", pvA, pv.Finalizers)
			oldVA := harness.VAName(d.handle, d.driver, d.node1)
			va, err := client.StorageV1().VolumeAttachments().Get(ctx, oldVA, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("VolumeAttachment %s of the deleted PV %s: %v", oldVA, pvA, err)
			}
			t.Logf("VolumeAttachment %s of PV %s on %s still exists (attached %v)", oldVA, pvA, d.node1, va.Status.Attached)
			// Re-created under a new name, for claim b.
			pvNew := d.ns + "-pv-a2"
			createBoundClaim(ctx, t, c, d, "b", pvNew)
			return pvNew
		})
	})
}

// runOneDisk runs the scenario; second makes the second PV of the disk, bound to claim b,
// and returns its name.
func runOneDisk(t *testing.T, c *modeCluster, variant, what string, second func(context.Context, *testing.T, *oneDisk) string) {
	t.Helper()
	ctx := t.Context()
	client := c.stack.Client
	nodes := groupNodes(oneDiskGroup)
	ns := "onedisk-" + variant + "-" + string(c.mode)
	d := &oneDisk{
		what: what, ns: ns, class: ns,
		driver: harness.DefaultDriver, handle: ns + "-disk",
		node1: nodes[0], node2: nodes[1],
		pvs: map[string]bool{},
	}
	if err := cluster.CreateNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CreateStorageClass(ctx, client, d.class); err != nil {
		t.Fatal(err)
	}

	// 1. Pod A on node 1, claim a bound by the PV controller to pv-a, attached.
	pvA := ns + "-pv-a"
	createBoundClaim(ctx, t, c, d, "a", pvA)
	podA := createPinnedPod(ctx, t, c, d, "a", d.node1, "a")
	if _, err := c.rec.Wait(ctx, "pod a Running", podTimeout, cluster.Is(cluster.PodRunning, ns, "a")); err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, c, ns))
	}
	oldVA := harness.VAName(d.handle, d.driver, d.node1)
	if _, err := c.rec.Wait(ctx, "VolumeAttachment "+oldVA+" attached", podTimeout, cluster.Is(cluster.VAAttached, "", oldVA)); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod a Running on %s, disk %s attached there through PV %s (VolumeAttachment %s)", d.node1, d.handle, pvA, oldVA)

	// 2. A second PV of the same disk, claim b, pod B pinned to node 2.
	pvB := second(ctx, t, d)
	created := time.Now()
	podB := createPinnedPod(ctx, t, c, d, "b", d.node2, "b")

	// 3. Pod B waits, the disk stays on node 1 only, the Multi-Attach Event comes.
	var twoNodes, running string
	var event *v1.Event
	var lastVAs []diskVA
	var checks int
	var listErr error
	// Watched for oneDiskWindow, and past it until one listing got through: an API server
	// loaded by the rest of the suite may answer late, which says nothing about adc.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, oneDiskWindow+2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if checks > 0 && time.Since(created) >= oneDiskWindow {
			return true, nil
		}
		vas, err := vasOfDisk(ctx, c, d)
		if err != nil {
			listErr = err
			return false, nil
		}
		checks++
		lastVAs = vas
		if twoNodes == "" && len(nodesOf(vas)) > 1 {
			twoNodes = fmt.Sprintf("%s after pod b was created: %s", time.Since(created).Round(10*time.Millisecond), describeVAs(vas))
		}
		p, err := client.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodRunning && running == "" {
			running = fmt.Sprintf("pod b Running on %s %s after it was created, while pod a runs on %s with the same disk", p.Spec.NodeName, time.Since(created).Round(10*time.Millisecond), d.node1)
		}
		if event == nil {
			event = multiAttachEvent(ctx, c, ns, "b", podB.UID)
			if event != nil {
				figure(t, c.mode, what+": pod B created -> Multi-Attach Event", since(created, time.Now()))
			}
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
	if checks == 0 {
		t.Fatalf("VolumeAttachments of disk %s never listed in %s: %v", d.handle, oneDiskWindow+2*time.Minute, listErr)
	}
	if twoNodes != "" {
		t.Errorf("disk %s attached to two nodes: %s", d.handle, twoNodes)
	}
	if running != "" {
		t.Errorf("%s", running)
	}
	if event == nil {
		t.Errorf("no Warning Event %s with %q on pod b within %s\n%s", multiAttachReason, multiAttachWord, oneDiskWindow, describePods(ctx, c, ns))
	} else {
		t.Logf("pod b: Event %s %s: %s", event.Type, event.Reason, event.Message)
	}
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{}); err == nil {
		t.Logf("after %s (%d checks): pod b %s (%s), VolumeAttachments of the disk: %s", oneDiskWindow, checks, p.Status.Phase, waitingReason(p), describeVAs(lastVAs))
	}

	// 4. Pod A deleted: the disk moves to node 2, detached from node 1 first.
	deleted := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &podA.UID}}); err != nil {
		t.Fatal(err)
	}
	newVA := harness.VAName(d.handle, d.driver, d.node2)
	runningB, err := c.rec.Wait(ctx, "pod b Running", 3*time.Minute, func(e cluster.Event) bool {
		return e.What == cluster.PodRunning && e.Namespace == ns && e.Name == "b" && e.UID == podB.UID
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, c, ns))
	}
	if runningB.Node != d.node2 {
		t.Errorf("pod b Running on %q, want %s", runningB.Node, d.node2)
	}
	oldGone, err := c.rec.Wait(ctx, "VolumeAttachment "+oldVA+" deleted", 3*time.Minute, cluster.Is(cluster.VADeleted, "", oldVA))
	if err != nil {
		t.Fatal(err)
	}
	newCreated, err := c.rec.Wait(ctx, "VolumeAttachment "+newVA+" created", 3*time.Minute, cluster.Is(cluster.VACreated, "", newVA))
	if err != nil {
		t.Fatal(err)
	}
	newAttached, err := c.rec.Wait(ctx, "VolumeAttachment "+newVA+" attached", 3*time.Minute, cluster.Is(cluster.VAAttached, "", newVA))
	if err != nil {
		t.Fatal(err)
	}
	if newCreated.At.Before(oldGone.At) {
		t.Errorf("VolumeAttachment %s (PV %s, node %s) created at %s, before VolumeAttachment %s (PV %s, node %s) was deleted at %s",
			newVA, newCreated.Detail, d.node2, newCreated.At.Format(time.StampMilli), oldVA, pvA, d.node1, oldGone.At.Format(time.StampMilli))
	}
	if runningB.At.Before(deleted) {
		t.Errorf("pod b was Running (%s) before pod a was deleted (%s)", runningB.At.Format(time.StampMilli), deleted.Format(time.StampMilli))
	} else {
		figure(t, c.mode, what+": pod A deleted -> old VA deleted", since(deleted, oldGone.At))
		figure(t, c.mode, what+": pod A deleted -> new VA attached", since(deleted, newAttached.At))
		figure(t, c.mode, what+": pod A deleted -> pod B Running", since(deleted, runningB.At))
	}
	for _, o := range overlaps(c, d) {
		t.Errorf("disk %s on two nodes at once (recorder): %s", d.handle, o)
	}

	// The disk is attached to node 2 only, through pod B's PV.
	var final []diskVA
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		vas, err := vasOfDisk(ctx, c, d)
		if err != nil {
			return false, nil
		}
		final = vas
		return len(vas) == 1 && vas[0].node == d.node2 && vas[0].attached && vas[0].pv == pvB, nil
	})
	if err != nil {
		t.Errorf("VolumeAttachments of disk %s: %s, want one, attached to %s through PV %s", d.handle, describeVAs(final), d.node2, pvB)
	}
}

// createBoundClaim creates claim in the scenario's namespace and a PV of the disk pre-bound to
// it (claimRef without a UID, as an administrator writes it), and waits until the PV controller
// binds them.
func createBoundClaim(ctx context.Context, t *testing.T, c *modeCluster, d *oneDisk, claim, pvName string) {
	t.Helper()
	client := c.stack.Client
	size := resource.MustParse("1Gi")
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: d.ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      rwo,
			StorageClassName: &d.class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(d.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s/%s: %v", d.ns, claim, err)
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   rwo,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              d.class,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: d.ns, Name: claim},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: d.driver, VolumeHandle: d.handle, FSType: "ext4"},
			},
		},
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PV %s: %v", pvName, err)
	}
	d.pvs[pvName] = true
	if _, err := c.rec.Wait(ctx, "claim "+claim+" bound to "+pvName, podTimeout, func(e cluster.Event) bool {
		return e.What == cluster.ClaimBound && e.Namespace == d.ns && e.Name == claim && e.Detail == pvName
	}); err != nil {
		t.Fatal(err)
	}
}

// createPinnedPod creates pod name on node (spec.nodeName) using claim.
func createPinnedPod(ctx context.Context, t *testing.T, c *modeCluster, d *oneDisk, name, node, claim string) *v1.Pod {
	t.Helper()
	pod := harness.PodSpec(d.ns, name, node, claim)
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	created, err := c.stack.Client.CoreV1().Pods(d.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", d.ns, name, err)
	}
	return created
}

// diskVA is a VolumeAttachment of the scenario's disk.
type diskVA struct {
	name, node, pv string
	attached       bool
	deleting       bool
}

// vasOfDisk returns the VolumeAttachments of the scenario's driver whose volume handle is the
// disk's: through spec.source.persistentVolumeName and that PV's spec.csi.volumeHandle (read
// once per PV: a handle never changes; a PV gone by now counts when it was one of the
// scenario's), or the inline CSI spec.
func vasOfDisk(ctx context.Context, c *modeCluster, d *oneDisk) ([]diskVA, error) {
	vas, err := c.stack.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []diskVA
	for i := range vas.Items {
		va := &vas.Items[i]
		// A VolumeAttachment's name is the hash of the handle, driver and node (the kubelet's
		// name): whichever PersistentVolume names the disk, no read of it is needed.
		if va.Spec.Attacher != d.driver || va.Name != harness.VAName(d.handle, d.driver, va.Spec.NodeName) {
			continue
		}
		dv := diskVA{name: va.Name, node: va.Spec.NodeName, attached: va.Status.Attached, deleting: va.DeletionTimestamp != nil}
		if va.Spec.Source.PersistentVolumeName != nil {
			dv.pv = *va.Spec.Source.PersistentVolumeName
		}
		out = append(out, dv)
	}
	return out, nil
}

func nodesOf(vas []diskVA) []string {
	var out []string
	for _, va := range vas {
		if !slices.Contains(out, va.node) {
			out = append(out, va.node)
		}
	}
	return out
}

func describeVAs(vas []diskVA) string {
	if len(vas) == 0 {
		return "none"
	}
	var parts []string
	for _, va := range vas {
		s := fmt.Sprintf("%s (node %s, PV %s, attached %v", va.name, va.node, va.pv, va.attached)
		if va.deleting {
			s += ", deleting"
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, "; ")
}

// multiAttachEvent returns the Warning Event FailedAttachVolume about the pod (by UID) whose
// message says Multi-Attach, or nil.
func multiAttachEvent(ctx context.Context, c *modeCluster, ns, pod string, uid types.UID) *v1.Event {
	sel := fields.Set{"involvedObject.name": pod, "reason": multiAttachReason}.AsSelector().String()
	list, err := c.stack.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil
	}
	for i := range list.Items {
		e := &list.Items[i]
		if e.InvolvedObject.UID == uid && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, multiAttachWord) {
			return e
		}
	}
	return nil
}

func waitingReason(p *v1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil {
			return "waiting: " + s.State.Waiting.Reason
		}
	}
	return "no container waiting"
}

// overlaps returns, from the recorder's watch over the whole scenario, every two
// VolumeAttachments of the disk on different nodes whose lives (first seen created to seen
// deleted) overlapped.
func overlaps(c *modeCluster, d *oneDisk) []string {
	type life struct {
		name, node, pv string
		from, to       time.Time
	}
	byUID := map[types.UID]*life{}
	var order []types.UID
	for _, e := range c.rec.Events(func(e cluster.Event) bool {
		return (e.What == cluster.VACreated || e.What == cluster.VADeleted) && d.pvs[e.Detail]
	}) {
		l := byUID[e.UID]
		if l == nil {
			l = &life{name: e.Name, node: e.Node, pv: e.Detail}
			byUID[e.UID] = l
			order = append(order, e.UID)
		}
		if e.What == cluster.VACreated {
			l.from = e.At
		} else {
			l.to = e.At
		}
	}
	var out []string
	now := time.Now()
	for i, a := range order {
		for _, b := range order[i+1:] {
			la, lb := byUID[a], byUID[b]
			if la.node == lb.node {
				continue
			}
			endA, endB := la.to, lb.to
			if endA.IsZero() {
				endA = now
			}
			if endB.IsZero() {
				endB = now
			}
			if la.from.Before(endB) && lb.from.Before(endA) {
				start, end := la.from, endA
				if lb.from.After(start) {
					start = lb.from
				}
				if endB.Before(end) {
					end = endB
				}
				out = append(out, fmt.Sprintf("%s (node %s, PV %s) and %s (node %s, PV %s) both existed from %s for %s",
					la.name, la.node, la.pv, lb.name, lb.node, lb.pv, start.Format(time.StampMilli), end.Sub(start).Round(10*time.Millisecond)))
			}
		}
	}
	return out
}
