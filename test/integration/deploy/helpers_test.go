package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// testDriver is the CSI driver of the tests' volumes, served by the simulated attacher.
const testDriver = "csi.deploy.example.com"

// scenario is one test's objects on the package's control plane, created as the admin (the
// tests play the cluster's users, kubelet and external-attacher; only adc runs as the
// ServiceAccount): a fresh namespace, one managed node named after it, and the
// cluster-scoped objects to delete when the test ends, so that the controllers of later
// tests (and of `go test -count=N` reruns) do not see them.
type scenario struct {
	t     *testing.T
	ctx   context.Context
	admin kubernetes.Interface
	ns    string
	node  string
	pvs   []string
}

func newScenario(ctx context.Context, t *testing.T) *scenario {
	t.Helper()
	admin := framework.Get(t).Client
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test namespace: %v", err)
	}
	s := &scenario{t: t, ctx: ctx, admin: admin, ns: ns.Name, node: ns.Name + "-node"}
	t.Cleanup(s.cleanup)
	kubelet := simulator.Kubelet{Client: admin}
	if _, err := kubelet.RegisterNode(ctx, s.node, true); err != nil {
		t.Fatal(err)
	}
	if err := kubelet.ReportCSINode(ctx, s.node, "", testDriver); err != nil {
		t.Fatal(err)
	}
	return s
}

// startAttacher runs the simulated external-attacher of testDriver, as the admin.
func startAttacher(ctx context.Context, t *testing.T) {
	t.Helper()
	a := &simulator.ExternalAttacher{Client: framework.Get(t).Client, Drivers: []string{testDriver}}
	if err := a.Run(ctx); err != nil {
		t.Fatalf("starting the simulated external-attacher: %v", err)
	}
}

// cleanup deletes the test's pods and cluster-scoped objects (the namespace stays: the
// control plane runs no namespace controller to empty it).
func (s *scenario) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := s.admin
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	logErr := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			s.t.Logf("cleanup: %s: %v", what, err)
		}
	}
	logErr("pods", c.CoreV1().Pods(s.ns).DeleteCollection(ctx, del, metav1.ListOptions{}))
	if vas, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		for _, va := range vas.Items {
			if va.Spec.NodeName == s.node {
				logErr("VolumeAttachment "+va.Name, c.StorageV1().VolumeAttachments().Delete(ctx, va.Name, del))
			}
		}
	}
	logErr("CSINode", c.StorageV1().CSINodes().Delete(ctx, s.node, del))
	logErr("node", c.CoreV1().Nodes().Delete(ctx, s.node, del))
	for _, pv := range s.pvs {
		logErr("PersistentVolume "+pv, c.CoreV1().PersistentVolumes().Delete(ctx, pv, del))
	}
}

// csiVolume creates a CSI PersistentVolume and a claim bound to it (the control plane runs
// no PV controller, so the test binds them as it would) and returns the claim's name.
func (s *scenario) csiVolume(name, handle string) string {
	s.t.Helper()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-" + name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}},
		},
	}
	claim, err := simulator.BindNewClaim(s.ctx, s.admin, s.ns, name, pv)
	if err != nil {
		s.t.Fatal(err)
	}
	s.pvs = append(s.pvs, pv.Name)
	return claim.Name
}

// pod creates a pod on the scenario's node that mounts the claim (none when claim is "").
func (s *scenario) pod(name, claim string) {
	s.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:   s.node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if claim != "" {
		pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
	_, err := s.admin.CoreV1().Pods(s.ns).Create(s.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating pod %s: %v", name, err)
	}
}

func (s *scenario) deletePod(name string) {
	s.t.Helper()
	zero := int64(0)
	if err := s.admin.CoreV1().Pods(s.ns).Delete(s.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		s.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// eventually polls cond until it holds, or fails the test with what it saw last.
func (s *scenario) eventually(what string, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	s.t.Helper()
	framework.Eventually(s.ctx, s.t, what, timeout, cond)
}

// podEvent holds once pod has an Event from adc with the reason, a message containing
// message, and a count of at least count.
func (s *scenario) podEvent(pod, reason, message string, count int32) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		list, err := s.admin.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name != pod || ev.Source.Component != adc.ComponentName {
				continue
			}
			if ev.Reason == reason && strings.Contains(ev.Message, message) && ev.Count >= count {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s x%d: %s", ev.Reason, ev.Count, ev.Message))
		}
		return false, fmt.Sprintf("adc's Events on pod %s: %q", pod, seen)
	}
}

// attachedAndListed is the end of an attach: the VolumeAttachment is attached (by the
// simulated external-attacher) and the node lists the volume in status.volumesAttached.
func (s *scenario) attachedAndListed(vaName, unique string) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		va, err := s.admin.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{})
		if err != nil {
			return false, "VolumeAttachment: " + err.Error()
		}
		if va.Spec.NodeName != s.node || va.Spec.Attacher != testDriver || !va.Status.Attached {
			return false, fmt.Sprintf("VolumeAttachment node=%s attacher=%s attached=%v", va.Spec.NodeName, va.Spec.Attacher, va.Status.Attached)
		}
		listed := s.listed()
		for _, n := range listed {
			if n == unique {
				return true, ""
			}
		}
		return false, fmt.Sprintf("node %s lists %v, want %s", s.node, listed, unique)
	}
}

// detached is the end of a detach: the VolumeAttachment is gone and the node no longer
// lists the volume.
func (s *scenario) detached(vaName, unique string) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		_, err := s.admin.StorageV1().VolumeAttachments().Get(ctx, vaName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("VolumeAttachment %s still there (err=%v)", vaName, err)
		}
		for _, n := range s.listed() {
			if n == unique {
				return false, fmt.Sprintf("node %s still lists %s", s.node, unique)
			}
		}
		return true, ""
	}
}

// listed returns the node's status.volumesAttached names.
func (s *scenario) listed() []string {
	n, err := s.admin.CoreV1().Nodes().Get(s.ctx, s.node, metav1.GetOptions{})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, av := range n.Status.VolumesAttached {
		out = append(out, string(av.Name))
	}
	return out
}

// vaName is the VolumeAttachment name of a CSI volume on a node, computed from the upstream
// rule (not by the code under test).
func vaName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// csiUnique is the name a node lists for a CSI volume in status.volumesAttached.
func csiUnique(driver, handle string) string { return "kubernetes.io/csi/" + driver + "^" + handle }
