package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/dashboard"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/testinformers"
)

// heldRetriesBeforeKubelet is how many backoff retries of the held volume the late-kubelet
// test lets pass before it starts the kubelet: the next one is then about 8 s away (0.5 s
// doubling, +/- 20%), far more than the kubelet takes to write its CSINode, so a
// VolumeAttachment created before that retry was due can only be the CSINode event's doing.
const heldRetriesBeforeKubelet = 4

// detachTimeout bounds how long a test waits for a deleted pod's volumes to be detached: the
// kubelet drops them from volumesInUse at its next status update (every second here).
const detachTimeout = 30 * time.Second

// lifecycleRuns numbers the namespaces of this file's tests, so -count=N runs each test again
// in a fresh namespace (envtest deletes none).
var lifecycleRuns atomic.Int32

func lifecycleNamespace(t *testing.T, s *harness.Stack, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, lifecycleRuns.Add(1))
	if err := s.CreateNamespace(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// Scenario 3: a node whose kubelet starts late. The Node object exists (registered earlier,
// or created by the provisioner) but its kubelet has not run yet, so there is no CSINode and
// nothing says whether gce-pd is migrated there: adc holds the pod's migrated gce-pd volume
// (no VolumeAttachment, one WaitingForNodeMigrationState Event however often it looks
// again), and attaches it through CSI as soon as the kubelet has written its CSINode and
// registered the driver: not before, or csi-attacher would fail the attach ("CSINode does not
// contain driver"). (A native CSI volume on a node without any CSINode would not wait.)
// The stack is the test's own (nodes cannot be added to the shared one); it runs in parallel
// with the other tests of this file, and leaves nothing behind either.
func TestLateKubeletHoldsThenAttaches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const node = "e2e-late-node"
	s := ownStack(t, harness.Options{
		Nodes:            []string{node},
		DeferredKubelets: []string{node},
		Drivers:          []harness.DriverOptions{{Name: harness.GCEPDDriver}},
	})

	// The Node as its earlier registration left it: managed by the attach/detach controller,
	// with the capacity its kubelet reported then. (A bare Node has a pod capacity of 0, and
	// a kubelet whose first status update is slow, on a loaded machine, would admit the pod
	// against it and fail it: "Node didn't have enough resource: pods".)
	capacity := v1.ResourceList{v1.ResourcePods: resource.MustParse("110"), v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
	if _, err := s.Client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: node, Annotations: map[string]string{adc.ManagedAnnotation: "true"},
	}, Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := lifecycleNamespace(t, s, "s3-late-kubelet")
	disk := ns + "-disk"
	pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "data", GCEPD: disk})
	if err != nil {
		t.Fatal(err)
	}
	handle := harness.GCEPDHandle(disk)
	vaName := harness.VAName(handle, harness.GCEPDDriver, node)
	if _, err := s.CreatePod(ctx, ns, "app", node, "data"); err != nil {
		t.Fatal(err)
	}

	// adc holds: it says so once on the pod, and still holds after looking again (its held
	// pairs' retries grow), with no VolumeAttachment.
	framework.Eventually(ctx, t, "adc's "+adc.ReasonWaitingForNode+" Event on the pod", podTimeout, func(ctx context.Context) (bool, string) {
		n, msgs, err := podEventCount(ctx, s, ns, "app", adc.ReasonWaitingForNode)
		if err != nil {
			return false, err.Error()
		}
		return n > 0, fmt.Sprintf("%d events %v", n, msgs)
	})
	framework.Eventually(ctx, t, "adc retrying the held volume", podTimeout, func(ctx context.Context) (bool, string) {
		retries, err := adcMetric(ctx, s, `adc_held_pairs_retries{mechanism="wait"}`)
		if err != nil {
			return false, err.Error()
		}
		return retries >= heldRetriesBeforeKubelet, fmt.Sprintf("adc_held_pairs_retries{mechanism=\"wait\"} = %v", retries)
	})
	if _, err := s.Client.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("VolumeAttachment %s while the node has no CSINode: err = %v, want NotFound", vaName, err)
	}
	n, msgs, err := podEventCount(ctx, s, ns, "app", adc.ReasonWaitingForNode)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("pod has %d %s Events while held, want exactly 1: %v", n, adc.ReasonWaitingForNode, msgs)
	}
	t.Logf("adc holds the volume: %s", strings.Join(msgs, "; "))

	seen, err := watchLateNode(ctx, s, node, harness.GCEPDDriver, vaName)
	if err != nil {
		t.Fatal(err)
	}
	retry := followHeldRetry(ctx, s, ns+"/app")
	since := time.Now()
	if err := s.Kubelet(node).Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kubelet(node).WaitRegistered(ctx, since, podTimeout); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"app"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	// The test wrote the Node's controller-managed annotation (checkKubeletWrote would
	// object); the CSINode is the kubelet's alone.
	if cn, err := s.Client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if m := managers(cn.ManagedFields); len(m) != 1 || m[0] != "hollow-kubelet" {
		t.Errorf("CSINode %s managed by %v, want only the kubelet", node, m)
	}
	checkAttached(ctx, t, s, attachment{pv: pv.Name, driver: harness.GCEPDDriver, handle: handle, node: node})

	csiNode, registered, created, attached := seen.times()
	t.Logf("kubelet started -> CSINode %s, -> driver registered %s; CSINode -> VolumeAttachment created %s; driver registered -> attached %s",
		csiNode.Sub(since).Round(time.Millisecond), registered.Sub(since).Round(time.Millisecond),
		created.Sub(csiNode).Round(time.Millisecond), attached.Sub(registered).Round(time.Millisecond))
	// adc re-decides a held volume on the CSINode event, not at its next backoff retry: the
	// VolumeAttachment was created (adc's own log time) before the retry that was scheduled
	// when the pair was last held (adc's rollout report). (That it was not created before the
	// kubelet ran is checked above.)
	createdAt, err := adcLogTime(s.ADC().Log(), "Created VolumeAttachment", `volumeAttachment="`+vaName+`"`)
	if err != nil {
		t.Fatal(err)
	}
	next, retries := retry.last()
	switch {
	case next.IsZero():
		t.Errorf("never read the held pair's next retry from adc's rollout report")
	case !createdAt.Before(next):
		t.Errorf("adc created VolumeAttachment %s at %s, not before the held pair's retry %d due at %s: a retry, not the CSINode event, attached it",
			vaName, createdAt.Format(time.StampMicro), retries+1, next.Format(time.StampMicro))
	default:
		t.Logf("VolumeAttachment created %s before the held pair's retry %d was due", next.Sub(createdAt).Round(time.Millisecond), retries+1)
	}
	// The kubelet writes its CSINode with the migrated-plugins annotation before it registers
	// the driver in it: adc then holds the volume once more, for the driver (at most one
	// WaitingForDriverRegistration Event, Normal), and creates no VolumeAttachment the
	// external-attacher would fail: no FailedAttachVolume on the pod.
	n, msgs, err = podEventCount(ctx, s, ns, "app", adc.ReasonWaitingForNode)
	switch {
	case err != nil:
		t.Error(err)
	case n != 1:
		t.Errorf("pod has %d %s Events in the end, want 1 (no CSINode): %v", n, adc.ReasonWaitingForNode, msgs)
	}
	if n, msgs, err := podEventCount(ctx, s, ns, "app", adc.ReasonWaitingForDriver); err != nil || n > 1 {
		t.Errorf("pod has %d %s Events (err %v), want at most 1 (the driver not registered yet): %v", n, adc.ReasonWaitingForDriver, err, msgs)
	}
	if n, msgs, err := podEventCount(ctx, s, ns, "app", adc.ReasonFailedAttach); err != nil || n != 0 {
		t.Errorf("pod has %d %s Events (err %v), want none: adc attached before the node registered the driver: %v", n, adc.ReasonFailedAttach, err, msgs)
	}
}

// Scenario 4: a pod deleted (default grace period) with a native CSI volume and a migrated
// gce-pd one: for each, the driver sees the kubelet's NodeUnpublishVolume and
// NodeUnstageVolume before csi-attacher's ControllerUnpublishVolume; the VolumeAttachment goes,
// and the node's status drops the volume (volumesAttached by adc, volumesInUse by the kubelet).
func TestPodDeletedUnmountsBeforeDetach(t *testing.T) {
	t.Parallel()
	s := shared
	failWithLogs(t, s)
	ctx := t.Context()
	ns := lifecycleNamespace(t, s, "s4-pod-deleted")
	node := s.Nodes()[0]
	disk := ns + "-disk"
	vols := []attachment{
		{pv: ns + "-csi", driver: harness.DefaultDriver, handle: ns + "-vol", node: node},
		{pv: ns + "-gce", driver: harness.GCEPDDriver, handle: harness.GCEPDHandle(disk), node: node},
	}
	if _, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "csi", Driver: harness.DefaultDriver, Handle: vols[0].handle}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "gce", GCEPD: disk}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePod(ctx, ns, "app", node, "csi", "gce"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"app"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	for _, a := range vols {
		checkAttached(ctx, t, s, a)
	}

	deleted := time.Now()
	if err := s.Client.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range vols {
		waitDetached(ctx, t, s, a)
	}
	t.Logf("pod deleted -> both volumes detached and out of node status: %s", time.Since(deleted).Round(time.Millisecond))
	if err := s.WaitPodGone(ctx, ns, "app", detachTimeout); err != nil {
		t.Fatal(err)
	}
	for _, a := range vols {
		calls, err := s.Driver(a.driver).CallsFor(a.handle)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"} {
			if !hasCall(calls, m, deleted) {
				t.Errorf("%s: no successful %s after the pod was deleted; calls:%s", a.handle, m, formatCalls(calls))
			}
		}
		checkDetachOrder(t, s, a.driver, a.handle)
	}
}

// Scenario 5: a ReadWriteOnce volume moves to another node: its pod on node A is deleted
// (default grace period) and a pod on node B with the same claim is created at once. adc does
// not attach the volume to B while it is attached to A; the driver sees
// ControllerPublishVolume for B only after ControllerUnpublishVolume from A (and A's unmount
// before that), and the pod on B reaches Running. (Scenarios 4 and 5 use different nodes of
// the shared stack and run in parallel.)
func TestRWOVolumeMovesToAnotherNode(t *testing.T) {
	t.Parallel()
	s := shared
	failWithLogs(t, s)
	ctx := t.Context()
	ns := lifecycleNamespace(t, s, "s5-rwo-move")
	from, to := s.Nodes()[1], s.Nodes()[2]
	handle := ns + "-vol"
	pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "data", Driver: harness.DefaultDriver, Handle: handle})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePod(ctx, ns, "on-a", from, "data"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"on-a"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	checkAttached(ctx, t, s, attachment{pv: pv.Name, driver: harness.DefaultDriver, handle: handle, node: from})

	moved := time.Now()
	if err := s.Client.CoreV1().Pods(ns).Delete(ctx, "on-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePod(ctx, ns, "on-b", to, "data"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"on-b"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod on %s deleted -> pod on %s Running: %s", from, to, time.Since(moved).Round(time.Millisecond))
	if n, msgs, err := podEventCount(ctx, s, ns, "on-b", adc.ReasonFailedAttach); err == nil {
		t.Logf("pod on %s got %d %s Events while the volume was still attached to %s: %v", to, n, adc.ReasonFailedAttach, from, msgs)
	}

	waitDetached(ctx, t, s, attachment{pv: pv.Name, driver: harness.DefaultDriver, handle: handle, node: from})
	va, err := s.Client.StorageV1().VolumeAttachments().Get(ctx, harness.VAName(handle, harness.DefaultDriver, to), metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("VolumeAttachment of %s on %s: %v", handle, to, err)
	case !va.Status.Attached || va.Spec.NodeName != to:
		t.Errorf("VolumeAttachment %s: node %s attached %v, want %s attached", va.Name, va.Spec.NodeName, va.Status.Attached, to)
	}

	calls, err := s.Driver(harness.DefaultDriver).CallsFor(handle)
	if err != nil {
		t.Fatal(err)
	}
	// The driver's node id is the same for every node; what follows the move tells A's
	// detach from B's attach: the first detach after the move is A's, every publish after
	// the move is B's (A's were all done before its pod was Running).
	var detached, published, staged time.Time
	for _, c := range calls {
		if c.Start.Before(moved) {
			continue
		}
		switch {
		case c.Method == "ControllerUnpublishVolume" && c.Code == "OK" && detached.IsZero():
			detached = c.Time
		case c.Method == "ControllerPublishVolume":
			if detached.IsZero() || c.Start.Before(detached) {
				t.Errorf("%s: ControllerPublishVolume at %s (%s), before ControllerUnpublishVolume from %s returned", handle, c.Start.Format("15:04:05.000000"), c.Code, from)
			}
			if c.Code == "OK" && published.IsZero() {
				published = c.Time
			}
		case c.Method == "NodeStageVolume" && c.Node == to && staged.IsZero():
			staged = c.Start
			if published.IsZero() || staged.Before(published) {
				t.Errorf("%s: kubelet of %s staged the volume at %s, before a ControllerPublishVolume for it returned", handle, to, staged.Format("15:04:05.000000"))
			}
		}
	}
	if detached.IsZero() || published.IsZero() || staged.IsZero() {
		t.Errorf("%s: after the move want ControllerUnpublishVolume, then ControllerPublishVolume, then NodeStageVolume on %s; calls:%s", handle, to, formatCalls(calls))
	}
	checkDetachOrder(t, s, harness.DefaultDriver, handle)
}

// waitDetached waits until a's VolumeAttachment is gone and its node's status lists the
// volume neither in volumesAttached nor in volumesInUse.
func waitDetached(ctx context.Context, t *testing.T, s *harness.Stack, a attachment) {
	t.Helper()
	name := harness.VAName(a.handle, a.driver, a.node)
	unique := harness.UniqueName(a.driver, a.handle)
	framework.Eventually(ctx, t, "volume "+a.handle+" detached from "+a.node, detachTimeout, func(ctx context.Context) (bool, string) {
		va, err := s.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
		vaGone := apierrors.IsNotFound(err)
		node, err := s.Client.CoreV1().Nodes().Get(ctx, a.node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		listed := false
		for _, av := range node.Status.VolumesAttached {
			listed = listed || string(av.Name) == unique
		}
		inUse := hasString(uniqueNames(node.Status.VolumesInUse), unique)
		state := "gone"
		if !vaGone {
			state = fmt.Sprintf("attached=%v deleting=%v finalizers=%v", va.Status.Attached, va.DeletionTimestamp != nil, va.Finalizers)
		}
		return vaGone && !listed && !inUse, fmt.Sprintf("VolumeAttachment %s: %s; volumesAttached has it: %v, volumesInUse has it: %v", name, state, listed, inUse)
	})
}

// hasCall says whether calls has a successful method call that arrived after since.
func hasCall(calls []harness.Call, method string, since time.Time) bool {
	for _, c := range calls {
		if c.Method == method && c.Code == "OK" && !c.Start.Before(since) {
			return true
		}
	}
	return false
}

// podEventCount counts the Events of reason on pod ns/name (with their repeat counts) and
// returns their messages.
func podEventCount(ctx context.Context, s *harness.Stack, ns, name, reason string) (int, []string, error) {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name, "reason": reason}.AsSelector().String()
	evs, err := s.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return 0, nil, fmt.Errorf("listing %s Events of pod %s/%s: %w", reason, ns, name, err)
	}
	n := 0
	var msgs []string
	for _, e := range evs.Items {
		n += max(1, int(e.Count))
		msgs = append(msgs, fmt.Sprintf("%q (x%d, from %s)", e.Message, max(1, e.Count), e.Source.Component))
	}
	return n, msgs, nil
}

// adcMetric reads one sample (name with its labels, as exposed) from adc's /metrics.
func adcMetric(ctx context.Context, s *harness.Stack, sample string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.ADCAddr()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading adc's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading adc's metrics: %w", err)
	}
	return 0, nil
}

// heldRetry follows a held pair's scheduled retry in adc's rollout report.
type heldRetry struct {
	mu      sync.Mutex
	next    time.Time
	retries int
}

func (h *heldRetry) last() (time.Time, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next, h.retries
}

// followHeldRetry reads adc's rollout report every 20 ms until ctx ends and keeps the next
// retry time of pod's held pair as last seen: once the pair is no longer held, the retry that
// was scheduled when it last was.
func followHeldRetry(ctx context.Context, s *harness.Stack, pod string) *heldRetry {
	h := &heldRetry{}
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.ADCAddr()+dashboard.APIPath, nil)
			if err != nil {
				return false, nil
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, nil
			}
			defer func() { _ = resp.Body.Close() }()
			var report rollout.Report
			if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
				return false, nil
			}
			for _, p := range report.Held {
				if p.Pod == pod && p.NextRetry != nil {
					h.mu.Lock()
					h.next, h.retries = *p.NextRetry, p.Retries
					h.mu.Unlock()
				}
			}
			return false, nil
		})
	}()
	return h
}

// adcLogTime returns the time of the first line of adc's klog output that contains every one
// of words (klog's header: I1125 17:47:19.993205, local time, this year).
func adcLogTime(log string, words ...string) (time.Time, error) {
	for _, line := range strings.Split(log, "\n") {
		matches := len(line) > 22
		for _, w := range words {
			matches = matches && strings.Contains(line, w)
		}
		if !matches {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the time of adc's log line %q: %w", line, err)
		}
		return at.AddDate(time.Now().Year(), 0, 0), nil
	}
	return time.Time{}, fmt.Errorf("no adc log line with %q", words)
}

// lateNodeTimes records, from watches, when the late node's CSINode appeared, when it listed
// the driver, and when the VolumeAttachment was created and attached.
type lateNodeTimes struct {
	mu                                     sync.Mutex
	csiNode, registered, created, attached time.Time
}

func (l *lateNodeTimes) times() (csiNode, registered, created, attached time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.csiNode, l.registered, l.created, l.attached
}

func firstTime(mu *sync.Mutex, at *time.Time) {
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if at.IsZero() {
		*at = now
	}
}

// watchLateNode watches node's CSINode and the VolumeAttachment vaName until ctx ends.
func watchLateNode(ctx context.Context, s *harness.Stack, node, driver, vaName string) (*lateNodeTimes, error) {
	l := &lateNodeTimes{}
	factory := informers.NewSharedInformerFactory(s.Client, 0)
	onCSINode := func(obj any) {
		cn, ok := obj.(*storagev1.CSINode)
		if !ok || cn.Name != node {
			return
		}
		firstTime(&l.mu, &l.csiNode)
		for _, d := range cn.Spec.Drivers {
			if d.Name == driver {
				firstTime(&l.mu, &l.registered)
			}
		}
	}
	onVA := func(obj any) {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok || va.Name != vaName {
			return
		}
		firstTime(&l.mu, &l.created)
		if va.Status.Attached {
			firstTime(&l.mu, &l.attached)
		}
	}
	for inf, f := range map[cache.SharedIndexInformer]func(any){
		factory.Storage().V1().CSINodes().Informer():          onCSINode,
		factory.Storage().V1().VolumeAttachments().Informer(): onVA,
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }}); err != nil {
			return nil, fmt.Errorf("watching node %s: %w", node, err)
		}
	}
	if err := testinformers.Start(ctx, factory); err != nil {
		return nil, err
	}
	return l, nil
}
