package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/testinformers"
)

// Helpers of the fault scenarios (faults_test.go): a stack of a test's own, the parts of a
// cluster envtest lacks (node lifecycle controller, an operator's taint), and reading what
// happened from the API and the driver's call log.

// outOfServiceTaint is the taint an operator puts on a node that is shut down for good
// (adc's pkg/adc.OutOfServiceTaint; spelled out here as a user would).
const outOfServiceTaint = "node.kubernetes.io/out-of-service"

// ownStack starts a stack for one test (it kills or restarts parts), adc under the shipped
// RBAC, and stops it when the test ends, checking that the API server refused adc nothing and
// that the stack left nothing behind.
func ownStack(t *testing.T, opts harness.Options) *harness.Stack {
	t.Helper()
	opts.ADCBinary = adcBinary
	opts.ShippedRBAC = true
	opts.Log = testWriter{t}
	start := time.Now()
	s, err := harness.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("own stack up in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Logs(60))
		}
		if err := adcRefused(s, t.Logf); err != nil {
			t.Error(err)
		}
		if err := countUnregisteredDriverWarnings(s, t.Name()); err != nil {
			t.Error(err)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
		for _, l := range s.Leftovers() {
			t.Errorf("left behind: %s", l)
		}
	})
	return s
}

// stopAll runs the stops at once and fails the test on any error.
func stopAll(t *testing.T, stops ...func() error) {
	t.Helper()
	errs := make([]error, len(stops))
	var wg sync.WaitGroup
	for i, stop := range stops {
		wg.Go(func() { errs[i] = stop() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// markNodeUnknown does what the node lifecycle controller (not in envtest) does when a
// kubelet stops posting status: the Ready condition becomes Unknown, since the time given.
func markNodeUnknown(ctx context.Context, s *harness.Stack, name string, since time.Time) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := s.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range node.Status.Conditions {
			c := &node.Status.Conditions[i]
			if c.Type == v1.NodeReady {
				c.Status, c.Reason, c.Message = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
				c.LastTransitionTime = metav1.NewTime(since)
			}
		}
		_, err = s.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("marking node %s NotReady: %w", name, err)
	}
	return nil
}

// taintNode adds taint to the node, as an operator does with kubectl taint.
func taintNode(ctx context.Context, s *harness.Stack, name string, taint v1.Taint) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := s.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = append(node.Spec.Taints, taint)
		_, err = s.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("tainting node %s with %s: %w", name, taint.Key, err)
	}
	return nil
}

// inUse reports whether node lists the volume in status.volumesInUse.
func inUse(ctx context.Context, t *testing.T, s *harness.Stack, node, unique string) bool {
	t.Helper()
	n, err := s.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hasString(uniqueNames(n.Status.VolumesInUse), unique)
}

// stillAttached returns why the attachment is not intact (empty when it is): its
// VolumeAttachment must be there, attached and not being deleted, and the driver must have
// had no ControllerUnpublishVolume for it.
func stillAttached(ctx context.Context, s *harness.Stack, a attachment) string {
	name := harness.VAName(a.handle, a.driver, a.node)
	va, err := s.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "VolumeAttachment " + name + " deleted"
	case err != nil:
		return "" // an API hiccup is not a detach; the next poll looks again
	case va.DeletionTimestamp != nil:
		return fmt.Sprintf("VolumeAttachment %s being deleted since %s", name, va.DeletionTimestamp.Format(time.TimeOnly))
	case !va.Status.Attached:
		return "VolumeAttachment " + name + " no longer attached"
	}
	calls, err := s.Driver(a.driver).CallsFor(a.handle, "ControllerUnpublishVolume")
	if err == nil && len(calls) > 0 {
		return fmt.Sprintf("ControllerUnpublishVolume at %s", calls[0].Start.Format(time.StampMilli))
	}
	return ""
}

// detached reports whether the attachment's VolumeAttachment is gone after a successful
// ControllerUnpublishVolume.
func detached(ctx context.Context, s *harness.Stack, a attachment) bool {
	calls, err := s.Driver(a.driver).CallsFor(a.handle, "ControllerUnpublishVolume")
	if err != nil || len(calls) == 0 || calls[len(calls)-1].Code != "OK" {
		return false
	}
	_, err = s.Client.StorageV1().VolumeAttachments().Get(ctx, harness.VAName(a.handle, a.driver, a.node), metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// callSummary lists the driver's calls for handle, for a failure message.
func callSummary(t *testing.T, s *harness.Stack, handle string) string {
	t.Helper()
	calls, err := s.Driver(harness.DefaultDriver).CallsFor(handle)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%s %s %s", c.Start.Format(time.StampMilli), c.Method, c.Code))
	}
	return strings.Join(out, "; ")
}

// hasEvent reports whether an Event with reason is recorded about the object.
func hasEvent(ctx context.Context, s *harness.Stack, kind, name, reason string) (bool, string) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "reason": reason}.AsSelector().String()
	evs, err := s.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return false, err.Error()
	}
	return len(evs.Items) > 0, fmt.Sprintf("%d events", len(evs.Items))
}

// registeredSince reports whether the kubelet of node registered the driver (the
// plugin-registration NotifyRegistrationStatus call) after since.
func registeredSince(s *harness.Stack, driver, node string, since time.Time) (bool, string) {
	calls, err := s.Driver(driver).Calls()
	if err != nil {
		return false, err.Error()
	}
	for _, c := range calls {
		if c.Method == "NotifyRegistrationStatus" && c.Node == node && c.Start.After(since) {
			return true, ""
		}
	}
	return false, "no NotifyRegistrationStatus from " + node + " since " + since.Format(time.StampMilli)
}

// containerRunning reports whether the pod's status has a running container.
func containerRunning(pod *v1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return true
		}
	}
	return false
}

// watchInUseDrops watches node until ctx ends; the function it returns lists the volumes
// that left its status.volumesInUse since the call.
func watchInUseDrops(ctx context.Context, s *harness.Stack, node string) (func() []string, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", node).String()
	}))
	var mu sync.Mutex
	var drops []string
	_, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Node)
			cur, ok2 := newObj.(*v1.Node)
			if !ok1 || !ok2 {
				return
			}
			now := uniqueNames(cur.Status.VolumesInUse)
			mu.Lock()
			defer mu.Unlock()
			for _, v := range uniqueNames(old.Status.VolumesInUse) {
				if !hasString(now, v) {
					drops = append(drops, v)
				}
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching node %s: %w", node, err)
	}
	if err := testinformers.Start(ctx, factory); err != nil {
		return nil, err
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), drops...)
	}, nil
}

// countVAs counts the VolumeAttachments, and those attached.
func countVAs(ctx context.Context, s *harness.Stack) (created, attached int) {
	vas, err := s.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0
	}
	for _, va := range vas.Items {
		created++
		if va.Status.Attached {
			attached++
		}
	}
	return created, attached
}

// countRunning counts the pods of ns in phase Running, on node (all nodes when empty).
func countRunning(ctx context.Context, s *harness.Stack, ns, node string) int {
	pods, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == v1.PodRunning && (node == "" || p.Spec.NodeName == node) {
			n++
		}
	}
	return n
}

// testWriter writes the harness's progress lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
