// Package controller tests the attach/detach controller end to end on a real control plane,
// with a simulated external-attacher and simulated kubelets. They are simulated here because
// these tests choose what the real parts do not let a test choose: which attach or detach
// fails or how long it takes, what a kubelet reports in volumesInUse and when it stops, which
// plugins a CSINode lists as migrated, and when a node's CSINode appears. The same contracts
// with the real kubelet, external-attacher and CSI driver are shown in test/e2e.
package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// testEnv is one test's slice of the shared control plane: its own namespace and node names
// (prefixed with the namespace), the simulators, and the controllers it started.
type testEnv struct {
	t        *testing.T
	ctx      context.Context
	cp       *framework.ControlPlane
	client   kubernetes.Interface
	ns       string
	kubelet  simulator.Kubelet
	attacher *simulator.ExternalAttacher

	// created lists the cluster-scoped objects the test created, deleted when it ends; it is
	// shared with the envs of subtests (withT).
	created *createdObjects
}

type createdObjects struct {
	mu                  sync.Mutex
	nodes, pvs, drivers []string
}

func (c *createdObjects) add(list *[]string, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*list = append(*list, name)
}

// withT returns the env for a subtest: same namespace, control plane and context, but
// failures are reported on the subtest.
func (e *testEnv) withT(t *testing.T) *testEnv {
	sub := *e
	sub.t = t
	return &sub
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.Get(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	// Names derive from the namespace, and node names also become a label value (at most 63
	// characters), so the namespace is kept short.
	base := nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	base = strings.Trim(base, "-")
	// The control plane lives as long as the test binary, so `go test -count=N` runs a test
	// again against the objects of its previous run (namespaces cannot be deleted without a
	// namespace controller): every run gets a fresh namespace, and so fresh names.
	ns := base
	for i := 2; ; i++ {
		_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) || i > 100 {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
		ns = fmt.Sprintf("%s-%d", base, i)
	}
	e := &testEnv{t: t, ctx: ctx, cp: cp, client: cp.Client, ns: ns, kubelet: simulator.Kubelet{Client: cp.Client}, created: &createdObjects{}}
	// Cleanups run last-registered first: this one runs after the test's controllers (started
	// later) are stopped, and before the context (and with it the simulators) is cancelled.
	t.Cleanup(e.cleanup)
	return e
}

// cleanup deletes what the test created outside its namespace (nodes, CSINodes,
// VolumeAttachments, PersistentVolumes, CSIDrivers) and its pods, so the controllers of later
// tests, which see the whole cluster, do not reconcile this test's leftovers.
func (e *testEnv) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := e.client
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	logErr := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Logf("cleanup: %s: %v", what, err)
		}
	}
	logErr("pods", c.CoreV1().Pods(e.ns).DeleteCollection(ctx, del, metav1.ListOptions{}))
	e.created.mu.Lock()
	defer e.created.mu.Unlock()
	nodes := map[string]bool{}
	for _, n := range e.created.nodes {
		nodes[n] = true
	}
	if vas, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		for _, va := range vas.Items {
			if nodes[va.Spec.NodeName] {
				logErr("VolumeAttachment "+va.Name, c.StorageV1().VolumeAttachments().Delete(ctx, va.Name, del))
			}
		}
	}
	for _, n := range e.created.nodes {
		logErr("CSINode "+n, c.StorageV1().CSINodes().Delete(ctx, n, del))
		logErr("node "+n, c.CoreV1().Nodes().Delete(ctx, n, del))
	}
	for _, pv := range e.created.pvs {
		logErr("PV "+pv, c.CoreV1().PersistentVolumes().Delete(ctx, pv, del))
	}
	for _, d := range e.created.drivers {
		logErr("CSIDriver "+d, c.StorageV1().CSIDrivers().Delete(ctx, d, del))
	}
}

// startAttacher runs the simulated external-attacher for the given drivers.
func (e *testEnv) startAttacher(a *simulator.ExternalAttacher) {
	e.t.Helper()
	a.Client = e.client
	if err := a.Run(e.ctx); err != nil {
		e.t.Fatalf("starting the simulated external-attacher: %v", err)
	}
	e.attacher = a
}

// runningController is a controller started by a test, stoppable on its own (restarts).
type runningController struct {
	*adc.Controller
	stop func()
}

// startController runs adc on its own informer factory until the test ends or stop is called.
func (e *testEnv) startController(opts adc.Options) *runningController {
	e.t.Helper()
	return e.startControllerWith(e.client, opts)
}

// startControllerWith runs adc with the given client (e.g. one through a fault proxy).
func (e *testEnv) startControllerWith(client kubernetes.Interface, opts adc.Options) *runningController {
	e.t.Helper()
	return e.startControllerOn(client, opts, nil)
}

// startControllerOn runs adc with the given client on an informer factory that wrap (if set)
// may wrap, e.g. to see when adc's own event handlers return.
func (e *testEnv) startControllerOn(client kubernetes.Interface, opts adc.Options, wrap func(informers.SharedInformerFactory) informers.SharedInformerFactory) *runningController {
	e.t.Helper()
	if opts.Backoff.InitialInterval == 0 {
		opts.Backoff = adc.BackoffOptions{InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxInterval: 2 * time.Second, RandomizationFactor: 0.1}
	}
	if opts.CRDPollInterval == 0 {
		opts.CRDPollInterval = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(e.ctx)
	if opts.ExpectationCheckInterval == 0 {
		opts.ExpectationCheckInterval = 100 * time.Millisecond
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	var adcFactory informers.SharedInformerFactory = factory
	if wrap != nil {
		adcFactory = wrap(factory)
	}
	ctrl, err := adc.New(client, e.cp.Dynamic, adcFactory, opts)
	if err != nil {
		cancel()
		e.t.Fatalf("creating the controller: %v", err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctrl.Run(ctx, 4) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			factory.Shutdown()
		})
	}
	e.t.Cleanup(stop)
	if err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ctrl.HasSynced(), nil
	}); err != nil {
		e.t.Fatalf("controller caches did not sync: %v", err)
	}
	return &runningController{Controller: ctrl, stop: stop}
}

func (e *testEnv) nodeName(suffix string) string { return e.ns + "-" + suffix }

// node registers a managed (or unmanaged) node.
func (e *testEnv) node(suffix string, managed bool) string {
	e.t.Helper()
	name := e.nodeName(suffix)
	if _, err := e.kubelet.RegisterNode(e.ctx, name, managed); err != nil {
		e.t.Fatal(err)
	}
	e.created.add(&e.created.nodes, name)
	return name
}

func (e *testEnv) csiNode(node, migrated string, drivers ...string) {
	e.t.Helper()
	if err := e.kubelet.ReportCSINode(e.ctx, node, migrated, drivers...); err != nil {
		e.t.Fatal(err)
	}
}

// csiPV returns a native CSI PersistentVolume named after the test.
func (e *testEnv) csiPV(suffix, driver, handle string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + suffix},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: modes,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
			},
		},
	}
}

// gcePV returns an in-tree GCE PD PersistentVolume in one zone.
func (e *testEnv) gcePV(suffix, pdName, zone string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + suffix, Labels: map[string]string{v1.LabelTopologyZone: zone}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: modes,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pdName},
			},
		},
	}
}

// boundClaim creates the PV and a claim bound to it (envtest runs no PV controller, so the
// test binds them the way it would) and returns the claim's name.
func (e *testEnv) boundClaim(pv *v1.PersistentVolume) string {
	e.t.Helper()
	claim, err := simulator.BindNewClaim(e.ctx, e.client, e.ns, pv.Name, pv)
	if err != nil {
		e.t.Fatal(err)
	}
	return claim.Name
}

// pod creates a pod scheduled to node with one volume per claim, plus any inline volumes.
func (e *testEnv) pod(name, node string, claims []string, inline ...v1.Volume) *v1.Pod {
	e.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	for i, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{
			Name:         fmt.Sprintf("data-%d", i),
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}},
		})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, inline...)
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

func (e *testEnv) deletePod(name string) {
	e.t.Helper()
	zero := int64(0)
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// eventually polls cond until it holds or the timeout passes, then fails with what it last saw.
func (e *testEnv) eventually(what string, timeout time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	framework.Eventually(e.ctx, e.t, what, timeout, func(context.Context) (bool, string) { return cond() })
}

// consistently checks cond keeps holding for d (used to show that something does NOT happen).
func (e *testEnv) consistently(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			e.t.Fatalf("%s: broken after %s: %s", what, d-time.Until(deadline), msg)
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatal("test context ended")
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (e *testEnv) va(name string) (*storagev1.VolumeAttachment, error) {
	return e.client.StorageV1().VolumeAttachments().Get(e.ctx, name, metav1.GetOptions{})
}

func (e *testEnv) vaExists(name string) func() (bool, string) {
	return func() (bool, string) {
		va, err := e.va(name)
		if err != nil {
			return false, err.Error()
		}
		return true, fmt.Sprintf("%s attached=%v", va.Name, va.Status.Attached)
	}
}

func (e *testEnv) vaGone(name string) func() (bool, string) {
	return func() (bool, string) {
		_, err := e.va(name)
		if apierrors.IsNotFound(err) {
			return true, "gone"
		}
		return false, fmt.Sprintf("VolumeAttachment %s still exists (err=%v)", name, err)
	}
}

// vasOnNode lists the VolumeAttachments for a node.
func (e *testEnv) vasOnNode(node string) []storagev1.VolumeAttachment {
	e.t.Helper()
	list, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("listing VolumeAttachments: %v", err)
	}
	var out []storagev1.VolumeAttachment
	for _, va := range list.Items {
		if va.Spec.NodeName == node {
			out = append(out, va)
		}
	}
	return out
}

func (e *testEnv) attachedNames(node string) []string {
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, av := range n.Status.VolumesAttached {
		out = append(out, string(av.Name))
	}
	return out
}

func (e *testEnv) listedOnNode(node, unique string) func() (bool, string) {
	return func() (bool, string) {
		names := e.attachedNames(node)
		for _, n := range names {
			if n == unique {
				return true, fmt.Sprint(names)
			}
		}
		return false, fmt.Sprintf("node %s lists %v, want %s", node, names, unique)
	}
}

func (e *testEnv) notListedOnNode(node, unique string) func() (bool, string) {
	return func() (bool, string) {
		ok, msg := e.listedOnNode(node, unique)()
		return !ok, msg
	}
}

// events returns the messages of the Events with reason on the object named name.
func (e *testEnv) events(namespace, name, reason string) []string {
	list, err := e.client.CoreV1().Events(namespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}

// pairState returns the controller's snapshot entry for a pod volume.
func pairState(ctrl *adc.Controller, node, pod, volume string) (readmodel.PairState, bool) {
	for _, s := range ctrl.Snapshot() {
		if s.Node == node && s.Pod == pod && s.Volume == volume {
			return s, true
		}
	}
	return readmodel.PairState{}, false
}

// vaName computes the VolumeAttachment name independently, from the rule in the upstream
// contract (the test must not trust the code under test for it).
func vaName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

func (e *testEnv) createCSIDriver(name string, attachRequired *bool) {
	e.t.Helper()
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: attachRequired}}
	if _, err := e.client.StorageV1().CSIDrivers().Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating CSIDriver %s: %v", name, err)
	}
	e.created.add(&e.created.drivers, name)
}

// driverName returns a CSI driver name unique to the test (CSIDrivers are cluster-scoped and
// their names are at most 63 characters).
func (e *testEnv) driverName(suffix string) string {
	tail := "." + suffix + ".example.com"
	prefix := e.ns
	if max := 63 - len(tail); len(prefix) > max {
		prefix = strings.Trim(prefix[:max], "-")
	}
	return prefix + tail
}

// warningEvents returns how many Warning Events with reason the object named name got (an
// Event the recorder aggregated counts as many times as its count says) and their messages.
func (e *testEnv) warningEvents(namespace, name, reason string) (int, []string) {
	list, err := e.client.CoreV1().Events(namespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return -1, []string{"listing Events: " + err.Error()}
	}
	n := 0
	var msgs []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name != name || ev.Reason != reason || ev.Type != v1.EventTypeWarning {
			continue
		}
		if ev.Count > 1 {
			n += int(ev.Count)
		} else {
			n++
		}
		msgs = append(msgs, ev.Message)
	}
	return n, msgs
}

// oneWarningEvent waits until the object has a Warning Event with reason, then checks that it
// stays exactly one (one Event per object and reason, not one per retry) and returns its
// message.
func (e *testEnv) oneWarningEvent(namespace, name, reason string, stable time.Duration) string {
	e.t.Helper()
	var msg string
	e.eventually(fmt.Sprintf("a Warning Event %s on %s/%s", reason, namespace, name), 10*time.Second, func() (bool, string) {
		n, msgs := e.warningEvents(namespace, name, reason)
		if n >= 1 && len(msgs) > 0 {
			msg = msgs[0]
		}
		return n >= 1, fmt.Sprintf("%d Events: %q", n, msgs)
	})
	e.consistently(fmt.Sprintf("exactly one Warning Event %s on %s/%s", reason, namespace, name), stable, func() (bool, string) {
		n, msgs := e.warningEvents(namespace, name, reason)
		return n == 1, fmt.Sprintf("%d Events: %q", n, msgs)
	})
	return msg
}

// nodeSnapshot returns the controller's snapshot entries for a node.
func nodeSnapshot(ctrl *adc.Controller, node string) []readmodel.PairState {
	var out []readmodel.PairState
	for _, s := range ctrl.Snapshot() {
		if s.Node == node {
			out = append(out, s)
		}
	}
	return out
}

// pairIs waits for a condition on a pod volume's snapshot entry.
func (e *testEnv) pairIs(ctrl *adc.Controller, node, pod, volume string, timeout time.Duration, ok func(readmodel.PairState) bool) readmodel.PairState {
	e.t.Helper()
	var last readmodel.PairState
	e.eventually(fmt.Sprintf("snapshot entry of %s/%s volume %s on %s", e.ns, pod, volume, node), timeout, func() (bool, string) {
		s, found := pairState(ctrl, node, e.ns+"/"+pod, volume)
		if !found {
			return false, "no entry"
		}
		last = s
		return ok(s), fmt.Sprintf("mechanism=%s phase=%s uniqueName=%s volumeAttachment=%s reason=%q", s.Mechanism, s.Phase, s.UniqueName, s.VolumeAttachment, s.Reason)
	})
	return last
}

// csiUnique is the unique volume name of a CSI volume, from the upstream contract.
func csiUnique(driver, handle string) string { return "kubernetes.io/csi/" + driver + "^" + handle }

const (
	gcePlugin = "kubernetes.io/gce-pd"
	gceDriver = "pd.csi.storage.gke.io"
)

// gceHandle is the translated handle of a zonal GCE PD (csi-translation-lib's format).
func gceHandle(zone, pd string) string { return "projects/UNSPECIFIED/zones/" + zone + "/disks/" + pd }

// inlineGCE is an inline (pod-embedded) GCE PD volume.
func inlineGCE(name, pd string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pd}}}
}

// nodeObj reads a node from the API server.
func (e *testEnv) nodeObj(name string) *v1.Node {
	e.t.Helper()
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading node %s: %v", name, err)
	}
	return n
}

// taint adds a taint to a node, retrying on conflicts with the controller's status writes.
func (e *testEnv) taint(node string, taint v1.Taint) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := e.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		_, err = e.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		e.t.Fatalf("tainting node %s: %v", node, err)
	}
}

// vaUIDs returns the UIDs of the named VolumeAttachments ("" for a missing one).
func (e *testEnv) vaUIDs(names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		if va, err := e.va(n); err == nil {
			out[n] = string(va.UID)
		} else {
			out[n] = ""
		}
	}
	return out
}
