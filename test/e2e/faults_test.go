package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// Scenario 6: a kubelet stops with a mounted volume and its node goes NotReady. While the
// kubelet last reported the volume in volumesInUse, adc must not detach it before
// --max-wait-for-unmount (5 s here) has passed since the node stopped being Ready, and then
// must; on a node with the out-of-service taint it must detach at once.
//
// Two nodes go down at the same moment T0, one of them tainted out-of-service; the test plays
// the parts envtest lacks, as upstream does them: the node lifecycle controller (Ready ->
// Unknown, lastTransitionTime T0: nobody else marks a stopped kubelet's node) and the pod
// garbage collector or an operator (`kubectl delete pod --force`: a pod on a dead kubelet stays
// Terminating with its container "running", so adc, like kube-controller-manager, keeps its
// volume attached until the pod is force-deleted). The out-of-service volume must be detached
// before the other one, and the other one no earlier than T0 + max-wait.
func TestKubeletStoppedWithMountedVolume(t *testing.T) {
	t.Parallel() // its own stack, mostly waiting out max-wait-for-unmount
	const maxWait = 5 * time.Second
	const waitNode, oosNode = "n-wait", "n-oos"
	s := ownStack(t, harness.Options{
		Nodes:   []string{waitNode, oosNode},
		ADCArgs: []string{"--max-wait-for-unmount", maxWait.String()},
	})
	ctx := t.Context()
	ns := "s6-kubelet-stopped"
	if err := s.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	vols := map[string]attachment{}
	for _, node := range []string{waitNode, oosNode} {
		handle := ns + "-" + node
		pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: node, Driver: harness.DefaultDriver, Handle: handle})
		if err != nil {
			t.Fatal(err)
		}
		vols[node] = attachment{pv: pv.Name, driver: harness.DefaultDriver, handle: handle, node: node}
		if _, err := s.CreatePod(ctx, ns, node, node, node); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{waitNode, oosNode}, podTimeout); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{waitNode, oosNode} {
		checkAttached(ctx, t, s, vols[node]) // also waits for the volume in volumesInUse
	}
	if t.Failed() {
		t.FailNow()
	}

	// Both kubelets stop (as systemd stops one; the volumes stay mounted) and both nodes go
	// NotReady at T0 (whole seconds: the API keeps lastTransitionTime to the second).
	stopAll(t, s.Kubelet(waitNode).Stop, s.Kubelet(oosNode).Stop)
	t0 := time.Now().Truncate(time.Second)
	deadline := t0.Add(maxWait)
	for _, node := range []string{waitNode, oosNode} {
		if err := markNodeUnknown(ctx, s, node, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := taintNode(ctx, s, oosNode, v1.Taint{Key: outOfServiceTaint, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{waitNode, oosNode} {
		// The stopped kubelet's last report still lists the volume as mounted.
		if !inUse(ctx, t, s, node, harness.UniqueName(harness.DefaultDriver, vols[node].handle)) {
			t.Fatalf("node %s does not list %s in volumesInUse after its kubelet stopped", node, vols[node].handle)
		}
		// Deleted as users and controllers delete pods (default grace period): the pod stays
		// Terminating, nobody being there to stop it; then force-deleted, as the pod garbage
		// collector does on an out-of-service node (or an operator with --force).
		if err := s.Client.CoreV1().Pods(ns).Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if pod, err := s.Client.CoreV1().Pods(ns).Get(ctx, node, metav1.GetOptions{}); err == nil {
			t.Logf("pod %s Terminating on its dead node, its container still reported running: %v", node, containerRunning(pod))
		}
		if err := s.Client.CoreV1().Pods(ns).Delete(ctx, node, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	forced := time.Now()
	t.Logf("kubelets stopped, nodes NotReady since %s, pods force-deleted %s later; max-wait-for-unmount %s",
		t0.Format("15:04:05"), forced.Sub(t0).Round(time.Millisecond), maxWait)

	// Until T0 + max-wait (the property itself, so a fixed window; a lower bound, which load
	// cannot break): the NotReady node's volume stays attached. That the out-of-service one
	// goes first is checked below from the driver's calls, in order.
	var oosGone time.Time
	window, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := wait.PollUntilContextCancel(window, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		now := time.Now()
		if why := stillAttached(ctx, s, vols[waitNode]); why != "" {
			return false, fmt.Errorf("%s after T0, %s before max-wait-for-unmount: %s", now.Sub(t0).Round(time.Millisecond), deadline.Sub(now).Round(time.Millisecond), why)
		}
		if oosGone.IsZero() && detached(ctx, s, vols[oosNode]) {
			oosGone = time.Now()
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("volume on NotReady node %s: %v", waitNode, err)
	}
	if !oosGone.IsZero() {
		t.Logf("out-of-service node: detached %s after the pods were force-deleted", oosGone.Sub(forced).Round(time.Millisecond))
	}

	framework.Eventually(ctx, t, "volume on "+waitNode+" detached after max-wait-for-unmount", 30*time.Second, func(ctx context.Context) (bool, string) {
		return detached(ctx, s, vols[waitNode]), "VolumeAttachment still there or no ControllerUnpublishVolume yet"
	})
	framework.Eventually(ctx, t, "volume on out-of-service node "+oosNode+" detached", 30*time.Second, func(ctx context.Context) (bool, string) {
		return detached(ctx, s, vols[oosNode]), "VolumeAttachment still there or no ControllerUnpublishVolume yet; calls: " + callSummary(t, s, vols[oosNode].handle)
	})
	calls, err := s.Driver(harness.DefaultDriver).CallsFor(vols[waitNode].handle, "ControllerUnpublishVolume")
	if err != nil {
		t.Fatal(err)
	}
	oosCalls, err := s.Driver(harness.DefaultDriver).CallsFor(vols[oosNode].handle, "ControllerUnpublishVolume")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) > 0 {
		// A lower bound the contract sets (no detach before the deadline), not a budget.
		if calls[0].Start.Before(deadline) {
			t.Errorf("ControllerUnpublishVolume of %s at %s, before T0 + max-wait-for-unmount %s", vols[waitNode].handle, calls[0].Start.Format(time.StampMilli), deadline.Format(time.StampMilli))
		}
		t.Logf("NotReady node: ControllerUnpublishVolume %s after T0 + max-wait-for-unmount", calls[0].Start.Sub(deadline).Round(time.Millisecond))
		// The order: the out-of-service volume is detached at once, so before the one that
		// waits out max-wait-for-unmount.
		if len(oosCalls) == 0 || !oosCalls[0].Start.Before(calls[0].Start) {
			t.Errorf("the volume on out-of-service node %s was not detached before the one on NotReady node %s (ControllerUnpublishVolume at %s); calls: %s",
				oosNode, waitNode, calls[0].Start.Format(time.StampMilli), callSummary(t, s, vols[oosNode].handle))
		}
	}
	for _, node := range []string{waitNode, oosNode} {
		// The detach was forced: the dead kubelet never unmounted, its status still says so.
		if !inUse(ctx, t, s, node, harness.UniqueName(harness.DefaultDriver, vols[node].handle)) {
			t.Errorf("node %s no longer lists %s in volumesInUse, but its kubelet is stopped", node, vols[node].handle)
		}
		calls, err := s.Driver(harness.DefaultDriver).CallsFor(vols[node].handle, "NodeUnpublishVolume", "NodeUnstageVolume")
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) > 0 {
			t.Errorf("node %s: %d node unpublish/unstage calls from a stopped kubelet: %+v", node, len(calls), calls)
		}
		framework.Eventually(ctx, t, "ForcedDetach Event on node "+node, 10*time.Second, func(ctx context.Context) (bool, string) {
			return hasEvent(ctx, s, "Node", node, "ForcedDetach")
		})
	}
	// Counted as kube-controller-manager counts them, one per reason.
	for _, reason := range []string{"timeout", "out-of-service"} {
		sample := `attachdetach_controller_forced_detaches{reason="` + reason + `"}`
		if v, err := adcMetric(ctx, s, sample); err != nil || v != 1 {
			t.Errorf("%s = %v (%v), want 1", sample, v, err)
		}
	}
}

// Scenario 7: faults on the real stack. During an attach storm of 50 pods on three nodes adc
// is killed (SIGKILL) and started again, the kube-apiserver restarts once, and one kubelet
// restarts. No volume may be published again after its kubelet staged it (the real
// external-attacher's own double publish of a fresh VolumeAttachment comes before that), none
// may be unpublished (every one is in use throughout), and every pod ends Running.
func TestFaultsDuringAttachStorm(t *testing.T) {
	t.Parallel() // its own stack
	const pods = 50
	s := ownStack(t, harness.Options{RestartableAPIServer: true})
	ctx := t.Context()
	ns := "s7-faults"
	if err := s.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	nodes := s.Nodes()
	want := make([]attachment, pods)
	names := make([]string, pods)
	for i := range pods {
		vol := fmt.Sprintf("vol-%d", i)
		handle := ns + "-" + vol
		pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: vol, Driver: harness.DefaultDriver, Handle: handle})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = attachment{pv: pv.Name, driver: harness.DefaultDriver, handle: handle, node: nodes[i%len(nodes)]}
		names[i] = fmt.Sprintf("app-%d", i)
	}
	// The storm: every pod created at once, from a few clients, as a controller scaling up
	// does; adc is killed as soon as a fifth of the VolumeAttachments exist.
	start := time.Now()
	createErrs := make(chan error, pods)
	var creators sync.WaitGroup
	for w := range 5 {
		creators.Go(func() {
			for i := w; i < pods; i += 5 {
				_, err := s.CreatePod(ctx, ns, names[i], want[i].node, fmt.Sprintf("vol-%d", i))
				createErrs <- err
			}
		})
	}
	var created, attached int
	framework.Eventually(ctx, t, "adc creating VolumeAttachments", podTimeout, func(ctx context.Context) (bool, string) {
		created, attached = countVAs(ctx, s)
		return created >= pods/5, fmt.Sprintf("%d created, %d attached", created, attached)
	})
	if err := s.ADC().Kill(); err != nil {
		t.Fatal(err)
	}
	created, attached = countVAs(ctx, s)
	t.Logf("adc killed %s into the storm: %d of %d VolumeAttachments created, %d attached", time.Since(start).Round(time.Millisecond), created, pods, attached)
	if attached == pods {
		t.Logf("every volume was attached before adc was killed: the kill did not hit the storm")
	}
	creators.Wait()
	close(createErrs)
	for err := range createErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ADC().Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitADCReady(ctx); err != nil {
		t.Fatal(err)
	}

	running := countRunning(ctx, s, ns, "")
	restart := time.Now()
	var down time.Time
	if err := s.ControlPlane().RestartAPIServer(func() error { down = time.Now(); return nil }); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(ctx, t, "kube-apiserver serving again", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := s.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("kube-apiserver restarted in %s (stopped in %s; %d of %d pods were Running)", time.Since(restart).Round(time.Millisecond), down.Sub(restart).Round(time.Millisecond), running, pods)

	// One kubelet restarts (SIGTERM, as systemd restarts it; its root dir stays) once some of
	// its volumes are mounted, so that it must find them again; other nodes still attach.
	kubelet := s.Kubelet(nodes[0])
	framework.Eventually(ctx, t, "a quarter of the pods of "+nodes[0]+" Running", podTimeout, func(ctx context.Context) (bool, string) {
		n := countRunning(ctx, s, ns, nodes[0])
		return n >= pods/len(nodes)/4, fmt.Sprintf("%d Running", n)
	})
	drops, err := watchInUseDrops(ctx, s, nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	running = countRunning(ctx, s, ns, "")
	kubeletStop := time.Now()
	if err := kubelet.Stop(); err != nil {
		t.Fatal(err)
	}
	kubeletStart := time.Now()
	if err := kubelet.Start(); err != nil {
		t.Fatal(err)
	}
	// Kubelet.WaitRegistered cannot tell this run from the last one within the same second
	// (heartbeats are kept to the second): wait for the new run to register the driver.
	framework.Eventually(ctx, t, "restarted kubelet of "+nodes[0]+" registering the driver", 60*time.Second, func(context.Context) (bool, string) {
		return registeredSince(s, harness.DefaultDriver, nodes[0], kubeletStart)
	})
	t.Logf("kubelet of %s restarted in %s (%d of %d pods were Running)", nodes[0], time.Since(kubeletStart).Round(time.Millisecond), running, pods)

	if err := s.WaitPodsRunning(ctx, ns, names, podTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d pods Running %s after the storm began", pods, time.Since(start).Round(time.Millisecond))

	// The restarted kubelet finds the volumes it had mounted in its root dir (the FakeMounter's
	// mount table died with the process), marks them uncertain and stages and publishes them
	// again. Wait for that, so that the checks below cover its whole recovery.
	var sum stormCalls
	framework.Eventually(ctx, t, "restarted kubelet of "+nodes[0]+" mounting its volumes again", 30*time.Second, func(context.Context) (bool, string) {
		var err error
		if sum, err = summarizeStorm(s, want, nodes[0], kubeletStop, kubeletStart); err != nil {
			return false, err.Error()
		}
		return sum.restaged == sum.mountedBefore && sum.republished == sum.mountedBefore,
			fmt.Sprintf("of %d volumes staged before the restart, %d staged and %d published again", sum.mountedBefore, sum.restaged, sum.republished)
	})
	t.Logf("restarted kubelet of %s: staged and published again all %d volumes it had staged before its restart", nodes[0], sum.mountedBefore)
	// The real kubelet drops volumes from volumesInUse for a moment while it restarts: those
	// it reported in use but had not mounted yet (its new volume manager starts from what it
	// finds on disk), and, when it writes its node status before that manager has rebuilt
	// them, mounted ones too (10 of 17 in one run). That is the kubelet's doing, not adc's; what
	// adc must not do is detach any of them, since their pods still need them: the unpublish
	// checks below prove it did not.
	mounted, unmounted := 0, 0
	for _, d := range drops() {
		if sum.mounted[strings.TrimPrefix(d, harness.UniqueName(harness.DefaultDriver, ""))] {
			mounted++
		} else {
			unmounted++
		}
	}
	t.Logf("restarted kubelet of %s dropped from volumesInUse for a moment %d volumes it had not mounted yet and %d of the %d it had mounted (adc must detach none of them: checked next)",
		nodes[0], unmounted, mounted, sum.mountedBefore)
	for _, c := range sum.unpublishes {
		t.Errorf("%s of %s at %s (node %q), but a pod used it throughout", c.Method, c.VolumeID, c.Start.Format(time.StampMilli), c.Node)
	}
	// checkAttached also fails a ControllerPublishVolume after the kubelet's first NodeStage:
	// a volume published again once attached.
	publishes := 0
	for _, a := range want {
		publishes += checkAttached(ctx, t, s, a)
	}
	t.Logf("the external-attacher called ControllerPublishVolume %d times for %d volumes (calls per volume -> volumes: %v)", publishes, pods, sum.publishes)
}

// stormCalls sums up the driver's calls for the storm's volumes.
type stormCalls struct {
	// publishes counts volumes by their number of successful ControllerPublishVolume calls.
	publishes map[int]int
	// unpublishes are the ControllerUnpublish, NodeUnpublish and NodeUnstage calls, failed
	// ones too.
	unpublishes []harness.Call
	// mounted has the handles of the restarted kubelet's volumes staged before its stop, and
	// mountedBefore counts them; restaged and republished, those of them staged and
	// published again after its start.
	mounted                              map[string]bool
	mountedBefore, restaged, republished int
}

func summarizeStorm(s *harness.Stack, want []attachment, restarted string, stop, start time.Time) (stormCalls, error) {
	sum := stormCalls{publishes: map[int]int{}, mounted: map[string]bool{}}
	all, err := s.Driver(harness.DefaultDriver).Calls()
	if err != nil {
		return sum, err
	}
	type tally struct {
		publishes                                 int
		stagedBefore, stagedAfter, publishedAfter bool
	}
	per := map[string]*tally{}
	for _, a := range want {
		per[a.handle] = &tally{}
	}
	for _, c := range all {
		v, ok := per[c.VolumeID]
		if !ok {
			continue
		}
		switch c.Method {
		case "ControllerUnpublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume":
			sum.unpublishes = append(sum.unpublishes, c) // even a failed attempt
		}
		if c.Code != "OK" {
			continue
		}
		onRestarted := c.Node == restarted
		switch c.Method {
		case "ControllerPublishVolume":
			v.publishes++
		case "NodeStageVolume":
			v.stagedBefore = v.stagedBefore || onRestarted && c.Start.Before(stop)
			v.stagedAfter = v.stagedAfter || onRestarted && c.Start.After(start)
		case "NodePublishVolume":
			v.publishedAfter = v.publishedAfter || onRestarted && c.Start.After(start)
		}
	}
	for handle, v := range per {
		sum.publishes[v.publishes]++
		if v.stagedBefore {
			sum.mounted[handle] = true
			sum.mountedBefore++
			if v.stagedAfter {
				sum.restaged++
			}
			if v.publishedAfter {
				sum.republished++
			}
		}
	}
	return sum, nil
}
