package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// Adopting adc on a running cluster, and giving it back (issue 42, item 1). Each mode that runs
// adc gets a small cluster of its own (three nodes, the mock CSI driver and the gce-pd CSI
// driver that in-tree gce-pd volumes migrate to) that starts under kube-controller-manager's
// own attach/detach controller, as an operator's cluster does. Before the switch a StatefulSet
// of three replicas (claims bound by the PV controller, pods placed by the scheduler) and
// three plain pods (two CSI volumes, one migrated in-tree gce-pd volume) run, their volumes
// attached by the built-in controller and reported in use by the kubelets. Then, in order:
//
//   - adopt: the documented switch. kcm-adc: kube-controller-manager restarted with
//     --controllers=*,migration-aware-attach-detach-controller,-persistentvolume-attach-detach-controller;
//     standalone: restarted with --controllers=*,-persistentvolume-attach-detach-controller,
//     then adc started. A new pod with a new volume attaches through adc (its
//     VolumeAttachment's creator, managedFields, is "adc").
//   - rollback: adc stopped (standalone: its process; kcm-adc: kube-controller-manager
//     restarted with --controllers=*), the built-in controller back; a new pod attaches
//     through it (creator "kube-controller-manager").
//   - churn: the switch to adc again, and during the gap with no attach/detach controller a
//     pod is deleted (gone before adc starts) and a pod with a new volume created: after the
//     switch the deleted pod's volume is detached (VolumeAttachment deleted, gone from its
//     node's status.volumesAttached) and the new pod's attached.
//   - churn-rollback: the same on the way back to the built-in controller, with migrated
//     gce-pd volumes (the deleted pod's and the new pod's).
//
// Each step is judged from the API server's audit log over its window (from the switch to a
// few seconds after its last wait; the policy logs every write of nodes/status,
// VolumeAttachments and Leases with its response: cluster.AuditPolicy): no VolumeAttachment
// created or deleted but the new pods' and the deleted pod's, no volume removed from any
// node's status.volumesAttached by any write but the deleted pod's, every other pod still
// Running as the same pod with no container restart. How long the switch and the first attach
// took is reported (figures), never asserted.
func TestClusterHandover(t *testing.T) {
	t.Parallel()
	inADCModes(t, func(t *testing.T, md cluster.Mode) {
		h := startHandover(t, md, "ho", cluster.Stock.Controllers())
		ctx := t.Context()
		h.deploy(ctx, t, h.builtIn())

		t.Run("adopt", func(t *testing.T) {
			from := time.Now()
			h.toADC(ctx, t, "handover", nil)
			v := h.attachNew(ctx, t, "handover", "new-adopt", h.nodes[0], harness.DefaultDriver, "adc")
			h.check(ctx, t, "handover", from, []hoVol{v}, nil)
		})
		if t.Failed() {
			return
		}
		t.Run("rollback", func(t *testing.T) {
			from := time.Now()
			h.toStock(ctx, t, "rollback", nil)
			v := h.attachNew(ctx, t, "rollback", "new-rollback", h.nodes[1], harness.DefaultDriver, h.builtIn())
			h.check(ctx, t, "rollback", from, []hoVol{v}, nil)
		})
		if t.Failed() {
			return
		}
		t.Run("churn", func(t *testing.T) {
			from := time.Now()
			gone := h.vols[h.plain[1]]
			// The new pod's claim is bound beforehand: in the kcm-adc mode the gap has no
			// PV controller either.
			created := h.createVolume(ctx, t, "new-churn", h.nodes[2], harness.DefaultDriver)
			var createdAt time.Time
			h.toADC(ctx, t, "churn", func() {
				// The gap: no attach/detach controller runs. The pod is deleted and gone
				// (its kubelet unmounted the volume), the new pod waits for its attach.
				h.deletePod(ctx, t, gone.pod)
				createdAt = h.createPodOf(ctx, t, created)
			})
			h.waitAttached(ctx, t, "churn", created, createdAt, "adc")
			h.waitDetached(ctx, t, "churn", gone)
			h.check(ctx, t, "churn", from, []hoVol{created}, []hoVol{gone})
		})
		if t.Failed() {
			return
		}
		t.Run("churn-rollback", func(t *testing.T) {
			// Back to the built-in controller while pods come and go, with migrated gce-pd
			// volumes: the one deleted in the gap detached, the one created attached by it.
			from := time.Now()
			gone := h.vols[h.plain[2]]
			created := h.createVolume(ctx, t, "new-churn-rollback", h.nodes[0], harness.GCEPDDriver)
			var createdAt time.Time
			h.toStock(ctx, t, "churn-rollback", func() {
				h.deletePod(ctx, t, gone.pod)
				createdAt = h.createPodOf(ctx, t, created)
			})
			h.waitAttached(ctx, t, "churn-rollback", created, createdAt, h.builtIn())
			h.waitDetached(ctx, t, "churn-rollback", gone)
			h.check(ctx, t, "churn-rollback", from, []hoVol{created}, []hoVol{gone})
		})
	})
}

// inADCModes runs run as a parallel subtest in each selected mode that runs adc (kcm-adc,
// standalone).
func inADCModes(t *testing.T, run func(*testing.T, cluster.Mode)) {
	for _, md := range []cluster.Mode{cluster.KCMADC, cluster.Standalone} {
		if clusters[md] == nil {
			continue
		}
		t.Run(string(md), func(t *testing.T) {
			t.Parallel()
			run(t, md)
		})
	}
}

// scenarioOf names the scenario of a handover cluster's namespace, for its figures.
var scenarioOf = map[string]string{"ho": "handover", "up": "upgrade", "both": "both at once"}

// settle is how long a step keeps watching after its last wait before the audit log is read,
// so that a late write (a detach adc decided after its caches synced, a status rewrite) falls
// in the window: a failure window, not a budget.
const settle = 5 * time.Second

// hoVol is a volume of the scenario and the pod that uses it.
type hoVol struct {
	pod                      string
	pv, driver, handle, node string
}

func (v hoVol) va() string     { return harness.VAName(v.handle, v.driver, v.node) }
func (v hoVol) unique() string { return harness.UniqueName(v.driver, v.handle) }

// handover is one mode's cluster of the handover scenarios.
type handover struct {
	mode cluster.Mode
	// mc is the cluster and its recorder, as the shared scenarios' helpers take them.
	mc    *modeCluster
	ns    string
	nodes []string
	// vols are the volumes in use, by pod name; pods the UIDs of the pods that must keep
	// running.
	vols map[string]hoVol
	pods map[string]types.UID
	// plain are the plain pods' names (the StatefulSet's are app-0..2).
	plain []string
	// upAt is when the last switch started the new attach/detach controller.
	upAt time.Time
}

// startHandover starts a cluster of its own for mode with kube-controller-manager's
// --controllers controllers (* for its built-in attach/detach controller; adc's process is not
// started in the standalone mode), auditing with cluster.AuditPolicy, and a recorder; the
// cluster stops with the test.
func startHandover(t *testing.T, md cluster.Mode, prefix, controllers string) *handover {
	t.Helper()
	h := &handover{mode: md, ns: prefix, vols: map[string]hoVol{}, pods: map[string]types.UID{}}
	for i := range 3 {
		h.nodes = append(h.nodes, fmt.Sprintf("%s-%d", prefix, i+1))
	}
	o := cluster.Options{
		Mode: md, Assets: assets, ADCBinary: adcBinary, Nodes: h.nodes,
		Drivers:     []harness.DriverOptions{{Name: harness.DefaultDriver}, {Name: harness.GCEPDDriver}},
		Controllers: controllers, DeferADC: true,
		AuditPolicy: cluster.AuditPolicy,
		Log:         os.Stderr,
	}
	started := time.Now()
	c, err := cluster.Start(t.Context(), o)
	if err != nil {
		t.Fatalf("starting the %s cluster under the built-in attach/detach controller: %v", md, err)
	}
	t.Logf("cluster up in %s", time.Since(started).Round(10*time.Millisecond))
	h.mc = &modeCluster{mode: md, stack: c}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs(80))
		}
		if md == cluster.Standalone {
			// adc runs under the RBAC deploy/kubernetes ships: nothing it asked was refused
			// (Lease, Events, its writes), as the shared clusters check at the end.
			if err := adcRefused(c.Stack); err != nil {
				t.Error(err)
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	if h.mc.rec, err = cluster.Record(t.Context(), c.Client); err != nil {
		t.Fatal(err)
	}
	return h
}

// deploy runs a StatefulSet of three replicas and three plain
// pods (two CSI volumes, one migrated gce-pd volume, one pod per node), and waits until every
// volume is attached (its VolumeAttachment created by creator) and reported in use by its
// node's kubelet.
func (h *handover) deploy(ctx context.Context, t *testing.T, creator string) {
	t.Helper()
	start := time.Now()
	a := deployApp(ctx, t, h.mc, h.ns, appSpec{replicas: 3})
	for i := range a.replicas {
		p := a.current(ctx, t, h.mc, a.pod(i))
		pv := a.pvOf(ctx, t, h.mc, i)
		h.vols[p.Name] = hoVol{pod: p.Name, pv: pv, driver: a.driver, handle: a.handles[pv], node: p.Spec.NodeName}
		h.pods[p.Name] = p.UID
	}
	var created []hoVol
	for i, d := range []string{harness.DefaultDriver, harness.DefaultDriver, harness.GCEPDDriver} {
		name := fmt.Sprintf("plain-%d", i+1)
		v, _ := h.createPod(ctx, t, name, h.nodes[i], d)
		created = append(created, v)
		h.plain = append(h.plain, name)
	}
	for _, v := range created {
		if _, err := h.mc.rec.Wait(ctx, "pod "+v.pod+" Running", podTimeout, cluster.Is(cluster.PodRunning, h.ns, v.pod)); err != nil {
			t.Fatalf("%v\n%s", err, describePods(ctx, h.mc, h.ns))
		}
		p, err := h.mc.stack.Client.CoreV1().Pods(h.ns).Get(ctx, v.pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h.vols[v.pod] = v
		h.pods[v.pod] = p.UID
	}
	for _, v := range h.vols {
		if _, err := h.mc.rec.Wait(ctx, "VolumeAttachment of "+v.pv+" attached", podTimeout, cluster.Is(cluster.VAAttached, "", v.va())); err != nil {
			t.Fatal(err)
		}
		if m := creators(ctx, t, h.mc, v.va()); !slices.Equal(m, []string{creator}) {
			t.Fatalf("VolumeAttachment %s of %s created by %v before the switch, want %s", v.va(), v.pv, m, creator)
		}
	}
	h.waitInUse(ctx, t)
	figure(t, h.mode, scenarioOf[h.ns]+": 6 pods Running, volumes in use (attached by "+creator+")", since(start, time.Now()))
}

// builtIn is the field manager of the built-in attach/detach controller's writes: client-go
// names it after kube-controller-manager's binary (kube-controller-manager, or
// kube-controller-manager-adc in the kcm-adc mode).
func (h *handover) builtIn() string {
	return filepath.Base(assets.ControllerManager(h.mode))
}

// waitInUse waits until every node's kubelet reports each of its volumes in use and the
// node's status lists it attached.
func (h *handover) waitInUse(ctx context.Context, t *testing.T) {
	t.Helper()
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		nodes := map[string]*v1.Node{}
		for _, v := range h.vols {
			n := nodes[v.node]
			if n == nil {
				var err error
				if n, err = h.mc.stack.Client.CoreV1().Nodes().Get(ctx, v.node, metav1.GetOptions{}); err != nil {
					return false, nil
				}
				nodes[v.node] = n
			}
			if !slices.Contains(n.Status.VolumesInUse, v1.UniqueVolumeName(v.unique())) {
				missing = append(missing, v.unique()+" not in use on "+v.node)
			}
			if !attachedIn(n, v.unique()) {
				missing = append(missing, v.unique()+" not attached in "+v.node+"'s status")
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("volumes not reported in use: %s: %v", strings.Join(missing, "; "), err)
	}
}

func attachedIn(n *v1.Node, unique string) bool {
	return slices.ContainsFunc(n.Status.VolumesAttached, func(a v1.AttachedVolume) bool { return string(a.Name) == unique })
}

// createPod creates a volume (createVolume) and a pod named name on node using it; it returns
// the volume and when the pod was created.
func (h *handover) createPod(ctx context.Context, t *testing.T, name, node, driver string) (hoVol, time.Time) {
	t.Helper()
	v := h.createVolume(ctx, t, name, node, driver)
	return v, h.createPodOf(ctx, t, v)
}

// createVolume creates claim name and a PV for it (driver gce-pd makes an in-tree gce-pd PV),
// each naming the other as an administrator pre-binds them, and waits until the PV controller
// has bound them; the volume is meant for a pod of the same name on node.
func (h *handover) createVolume(ctx context.Context, t *testing.T, name, node, driver string) hoVol {
	t.Helper()
	client := h.mc.stack.Client
	v := hoVol{pod: name, pv: h.ns + "-" + name, driver: driver, node: node}
	size := resource.MustParse("1Gi")
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	none := ""
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: rwo, StorageClassName: &none, VolumeName: v.pv,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		},
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: v.pv},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   rwo,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: h.ns, Name: name},
		},
	}
	if driver == harness.GCEPDDriver {
		disk := h.ns + "-" + name + "-disk"
		pv.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: disk, FSType: "ext4"}
		v.handle = harness.GCEPDHandle(disk)
	} else {
		v.handle = h.ns + "-" + name + "-vol"
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: v.handle, FSType: "ext4"}
	}
	// The PV first: the claim's add then finds it and the PV controller binds both at once
	// (the other way round waits for its 15 s resync).
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PV %s: %v", v.pv, err)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(h.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s/%s: %v", h.ns, name, err)
	}
	if _, err := h.mc.rec.Wait(ctx, "claim "+name+" bound", podTimeout, func(e cluster.Event) bool {
		return e.What == cluster.ClaimBound && e.Namespace == h.ns && e.Name == name && e.Detail == v.pv
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// createPodOf creates v's pod on v's node and returns when.
func (h *handover) createPodOf(ctx context.Context, t *testing.T, v hoVol) time.Time {
	t.Helper()
	pod := harness.PodSpec(h.ns, v.pod, v.node, v.pod)
	grace := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	created := time.Now()
	if _, err := h.mc.stack.Client.CoreV1().Pods(h.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", h.ns, v.pod, err)
	}
	return created
}

// deletePod deletes pod name and waits until it is gone (its kubelet stopped it and unmounted
// its volume); the volume is no longer one that must stay attached.
func (h *handover) deletePod(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	uid := h.pods[name]
	if err := h.mc.stack.Client.CoreV1().Pods(h.ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	if err := h.mc.stack.WaitPodGone(ctx, h.ns, name, podTimeout); err != nil {
		t.Fatal(err)
	}
	delete(h.pods, name)
	delete(h.vols, name)
}

// attachNew creates a pod with a new volume on node and waits until it runs, attached by
// manager (waitAttached).
func (h *handover) attachNew(ctx context.Context, t *testing.T, step, name, node, driver, manager string) hoVol {
	t.Helper()
	v, created := h.createPod(ctx, t, name, node, driver)
	h.waitAttached(ctx, t, step, v, created, manager)
	return v
}

// waitAttached waits until v's pod runs and its VolumeAttachment is attached, checks that
// manager created the VolumeAttachment (any when empty), reports how long it took from created, and adds the
// pod to those that must keep running.
func (h *handover) waitAttached(ctx context.Context, t *testing.T, step string, v hoVol, created time.Time, manager string) {
	t.Helper()
	attached, err := h.mc.rec.Wait(ctx, "VolumeAttachment of "+v.pv+" attached", podTimeout, cluster.Is(cluster.VAAttached, "", v.va()))
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, h.mc, h.ns))
	}
	running, err := h.mc.rec.Wait(ctx, "pod "+v.pod+" Running", podTimeout, cluster.Is(cluster.PodRunning, h.ns, v.pod))
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, h.mc, h.ns))
	}
	if m := creators(ctx, t, h.mc, v.va()); manager == "" {
		t.Logf("VolumeAttachment %s of the new pod %s created by %v", v.va(), v.pod, m)
		manager = strings.Join(m, "+")
	} else if !slices.Equal(m, []string{manager}) {
		t.Errorf("VolumeAttachment %s of the new pod %s created by %v, want %s", v.va(), v.pod, m, manager)
	}
	p, err := h.mc.stack.Client.CoreV1().Pods(h.ns).Get(ctx, v.pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	figure(t, h.mode, step+": new pod created -> attached by "+manager, since(created, attached.At))
	figure(t, h.mode, step+": new pod created -> Running", since(created, running.At))
	h.vols[v.pod] = v
	h.pods[v.pod] = p.UID
}

// waitDetached waits until v's VolumeAttachment is deleted and its node's status no longer
// lists the volume.
func (h *handover) waitDetached(ctx context.Context, t *testing.T, step string, v hoVol) {
	t.Helper()
	deleted, err := h.mc.rec.Wait(ctx, "VolumeAttachment of the deleted pod's "+v.pv+" deleted", podTimeout, cluster.Is(cluster.VADeleted, "", v.va()))
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := h.mc.stack.Client.CoreV1().Nodes().Get(ctx, v.node, metav1.GetOptions{})
		return err == nil && !attachedIn(n, v.unique()), nil
	})
	if err != nil {
		t.Fatalf("%s still in node %s's status.volumesAttached: %v", v.unique(), v.node, err)
	}
	figure(t, h.mode, step+": controller started -> deleted pod's volume detached", since(h.upAt, deleted.At))
}

// creators returns the managers that created VolumeAttachment name: those of its managedFields
// entries that own a field of its spec.
func creators(ctx context.Context, t *testing.T, mc *modeCluster, name string) []string {
	t.Helper()
	va, err := mc.stack.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading VolumeAttachment %s: %v", name, err)
	}
	var out []string
	for _, m := range va.ManagedFields {
		if m.Subresource == "" && m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:spec"`) && !slices.Contains(out, m.Manager) {
			out = append(out, m.Manager)
		}
	}
	return out
}

// toADC stops the built-in attach/detach controller and starts adc (the mode's switch); gap,
// when set, runs in between, while no attach/detach controller runs.
func (h *handover) toADC(ctx context.Context, t *testing.T, step string, gap func()) {
	t.Helper()
	s := h.mc.stack
	start := time.Now()
	switch h.mode {
	case cluster.KCMADC:
		// One restart: kube-controller-manager stops with its built-in controller and comes
		// back with adc in its place.
		if err := s.ControllerManager().Stop(); err != nil {
			t.Fatal(err)
		}
		h.runGap(t, step, gap)
		s.SetControllers(cluster.KCMADC.Controllers())
		h.upAt = time.Now()
		if err := s.ControllerManager().Start(); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitControllerManagerHealthy(ctx); err != nil {
			t.Fatal(err)
		}
	case cluster.Standalone:
		if err := s.RestartControllerManager(ctx, cluster.Standalone.Controllers()); err != nil {
			t.Fatal(err)
		}
		h.runGap(t, step, gap)
		h.upAt = time.Now()
		if err := s.ADC().Start(); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitADCReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	figure(t, h.mode, step+": switch to adc (stop built-in -> adc ready)", since(start, time.Now()))
}

// runGap runs gap (when set) and reports how long no attach/detach controller ran.
func (h *handover) runGap(t *testing.T, step string, gap func()) {
	t.Helper()
	if gap == nil {
		return
	}
	start := time.Now()
	gap()
	figure(t, h.mode, step+": gap with no attach/detach controller (test's changes)", since(start, time.Now()))
}

// toStock stops adc and brings the built-in attach/detach controller back (the rollback);
// gap, when set, runs in between, while no attach/detach controller runs.
func (h *handover) toStock(ctx context.Context, t *testing.T, step string, gap func()) {
	t.Helper()
	s := h.mc.stack
	start := time.Now()
	switch h.mode {
	case cluster.Standalone:
		if err := s.ADC().Stop(); err != nil {
			t.Fatal(err)
		}
	case cluster.KCMADC:
		if err := s.ControllerManager().Stop(); err != nil {
			t.Fatal(err)
		}
	}
	h.runGap(t, step, gap)
	h.upAt = time.Now()
	if err := s.RestartControllerManager(ctx, cluster.Stock.Controllers()); err != nil {
		t.Fatal(err)
	}
	figure(t, h.mode, step+": switch to built-in (stop adc -> kcm up)", since(start, time.Now()))
}

// check judges the step that began at from, after settle: from the audit log, no
// VolumeAttachment created or deleted but the created volumes' creates and the freed
// volumes' deletes, no volume dropped from any node's status.volumesAttached but the freed
// ones; and every pod that must run still runs as itself with no container restart.
func (h *handover) check(ctx context.Context, t *testing.T, step string, from time.Time, created, freed []hoVol) {
	t.Helper()
	time.Sleep(settle)
	to := time.Now()
	audit, err := cluster.ReadAudit(h.mc.stack.Stack)
	if err != nil {
		t.Fatal(err)
	}
	checkAudit(t, h.mode, step, audit, from, to, created, freed)
	h.checkPods(ctx, t)
}

// checkAudit is check's audit log part, shared with the upgrade scenario.
func checkAudit(t *testing.T, md cluster.Mode, step string, audit *cluster.Audit, from, to time.Time, created, freed []hoVol) {
	t.Helper()
	checkAuditOf(t, md, step, audit, from, to, created, freed, nil)
}

// checkAuditOf is checkAudit judging only the node status writes judged accepts (all when
// nil); a volume another write dropped is logged.
func checkAuditOf(t *testing.T, md cluster.Mode, step string, audit *cluster.Audit, from, to time.Time, created, freed []hoVol, judged func(auditlog.Request) bool) {
	t.Helper()
	creates, deletes, dropOK := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, v := range created {
		creates[v.va()] = true
	}
	for _, v := range freed {
		deletes[v.va()] = true
		dropOK[v.node+" "+v.unique()] = true
	}
	changes := audit.VolumeAttachmentChanges(from, to)
	for _, r := range changes {
		switch {
		case r.Verb == "create" && creates[r.Name] && cluster.Succeeded(r):
		case r.Verb == "delete" && deletes[r.Name]:
		case r.Verb == "create" && !cluster.Succeeded(r):
			// Refused (AlreadyExists): nothing re-created, but a controller decided to.
			t.Logf("%s: refused VolumeAttachment create: %s at %s", step, r, r.Received.Format(time.StampMilli))
		default:
			t.Errorf("%s: VolumeAttachment %s at %s (%s): only the new pods' VolumeAttachments may be created and the deleted pods' deleted", step, r, r.Received.Format(time.StampMilli), r.UserAgent)
		}
	}
	writes, err := audit.NodeStatusWrites()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cluster.DroppedVolumes(writes, from, to) {
		switch {
		case judged != nil && !judged(d.Write.Request):
			t.Logf("%s: not judged here: %s", step, d)
		case !dropOK[d.Write.Node+" "+d.Volume]:
			t.Errorf("%s: %s", step, d)
		default:
			t.Logf("%s: as expected, %s", step, d)
		}
	}
	var statusWrites int
	for _, w := range writes {
		if cluster.Within(w.Request, from, to) && !kubelet(w.Request) {
			statusWrites++
		}
	}
	controllerWrites := audit.Writes("", from, to, "volumeattachments", "nodes/status")
	controllerWrites = slices.DeleteFunc(controllerWrites, func(r auditlog.Request) bool {
		return kubelet(r) || strings.HasPrefix(r.UserAgent, "csi-attacher")
	})
	figure(t, md, step+": VolumeAttachment creates/deletes, node status writes (not kubelets')",
		fmt.Sprintf("%d, %d over %s", len(changes), statusWrites, to.Sub(from).Round(time.Second)))
	t.Logf("%s: writes of VolumeAttachments and node status in the window (kubelets' and csi-attacher's left out): %s", step, cluster.WritersOf(controllerWrites))
}

// kubelet says whether r is a kubelet's (the hollow kubelets authenticate as the admin).
func kubelet(r auditlog.Request) bool {
	return strings.HasPrefix(r.User, "system:node:") || strings.HasPrefix(r.UserAgent, "hollow-kubelet")
}

// checkPods fails for every pod that must run and does not, runs under another UID, or
// restarted a container.
func (h *handover) checkPods(ctx context.Context, t *testing.T) {
	t.Helper()
	for name, uid := range h.pods {
		p, err := h.mc.stack.Client.CoreV1().Pods(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s: %v", name, err)
			continue
		}
		if p.UID != uid || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: UID %s (was %s), phase %s, deleting %v: want the same pod Running", name, p.UID, uid, p.Status.Phase, p.DeletionTimestamp != nil)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("pod %s: container %s restarted %d times", name, cs.Name, cs.RestartCount)
			}
		}
	}
}
