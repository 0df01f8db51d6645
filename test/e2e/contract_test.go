package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// attachment is one volume attached to one node, as a test expects it.
type attachment struct {
	pv, driver, handle, node string
}

// checkAttached checks the contract of an attached volume on the real stack: the
// VolumeAttachment name, spec and status, the external-attacher's finalizer, the volume in
// node status.volumesAttached (by adc) and status.volumesInUse (by the kubelet), and, in the
// driver's call log, ControllerPublishVolume to the driver's node id, every one of them
// before the kubelet of that node staged and published the volume. (The real attacher often
// publishes twice within ~100 ms: it syncs the VolumeAttachment again on the event of its own
// finalizer update, before its status write is in its cache. Idempotent, and not adc's doing.)
// It returns how many ControllerPublishVolume calls the volume got.
func checkAttached(ctx context.Context, t *testing.T, s *harness.Stack, a attachment) (publishes int) {
	t.Helper()
	name := harness.VAName(a.handle, a.driver, a.node)
	va, err := s.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("VolumeAttachment %s of %s on %s: %v", name, a.pv, a.node, err)
		return 0
	}
	if va.Spec.Attacher != a.driver || va.Spec.NodeName != a.node || va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != a.pv {
		t.Errorf("VolumeAttachment %s spec = %+v, want attacher %s node %s pv %s", name, va.Spec, a.driver, a.node, a.pv)
	}
	if !va.Status.Attached {
		t.Errorf("VolumeAttachment %s not attached: %+v", name, va.Status)
	}
	fin := "external-attacher/" + strings.ReplaceAll(a.driver, ".", "-")
	if !hasString(va.Finalizers, fin) {
		t.Errorf("VolumeAttachment %s finalizers %v, want the external-attacher's %s", name, va.Finalizers, fin)
	}
	// adc creates the VolumeAttachment and never writes it again; the attacher owns the rest.
	if m := managers(va.ManagedFields); !hasString(m, "adc") || len(m) != 2 {
		t.Errorf("VolumeAttachment %s written by %v, want adc (create) and the external-attacher only", name, m)
	}

	unique := harness.UniqueName(a.driver, a.handle)
	// The kubelet reports volumesInUse at its next status update: poll for it.
	framework.Eventually(ctx, t, "volume "+unique+" in node "+a.node+" status", 10*time.Second, func(ctx context.Context) (bool, string) {
		node, err := s.Client.CoreV1().Nodes().Get(ctx, a.node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		attached := false
		for _, av := range node.Status.VolumesAttached {
			if string(av.Name) == unique {
				attached = true
			}
		}
		inUse := hasString(uniqueNames(node.Status.VolumesInUse), unique)
		return attached && inUse, fmt.Sprintf("volumesAttached has it: %v, volumesInUse has it: %v", attached, inUse)
	})

	calls, err := s.Driver(a.driver).CallsFor(a.handle)
	if err != nil {
		t.Fatal(err)
	}
	var lastPublish, staged, mounted time.Time
	for _, c := range calls {
		if c.Code != "OK" {
			continue
		}
		switch {
		case c.Method == "ControllerPublishVolume":
			publishes++
			if c.NodeID != a.driver {
				t.Errorf("%s: ControllerPublishVolume with node id %q, want the CSINode's %q", a.handle, c.NodeID, a.driver)
			}
			lastPublish = c.Start
		case c.Method == "NodeStageVolume" && c.Node == a.node && staged.IsZero():
			staged = c.Start
		case c.Method == "NodePublishVolume" && c.Node == a.node && mounted.IsZero():
			mounted = c.Start
		case strings.HasPrefix(c.Method, "Node") && c.Node != a.node && c.Method != "NodeGetVolumeStats":
			t.Errorf("%s: %s came from node %s, want only %s", a.handle, c.Method, c.Node, a.node)
		}
	}
	switch {
	case publishes == 0:
		t.Errorf("%s: no successful ControllerPublishVolume; calls: %+v", a.handle, calls)
	case staged.IsZero() || mounted.IsZero():
		t.Errorf("%s: kubelet of %s did not stage and publish the volume; calls: %+v", a.handle, a.node, calls)
	case staged.Before(lastPublish):
		t.Errorf("%s: ControllerPublishVolume at %s, after the kubelet staged the volume at %s", a.handle, lastPublish, staged)
	}
	return publishes
}

// checkKubeletWrote checks that the node's controller-managed annotation and its CSINode
// (with the migrated-plugins annotation and every driver) were written by the kubelet.
func checkKubeletWrote(ctx context.Context, t *testing.T, s *harness.Stack, nodeName string) {
	t.Helper()
	node, err := s.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", nodeName, err)
	}
	if got := node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"]; got != "true" {
		t.Errorf("node %s controller-managed-attach-detach annotation = %q, want true from the kubelet", nodeName, got)
	}
	if m := fieldManagers(node.ManagedFields, "f:volumes.kubernetes.io/controller-managed-attach-detach"); len(m) != 1 || m[0] != "hollow-kubelet" {
		t.Errorf("node %s controller-managed-attach-detach annotation written by %v, want only the kubelet", nodeName, m)
	}
	csiNode, err := s.Client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CSINode %s: %v", nodeName, err)
	}
	if m := managers(csiNode.ManagedFields); len(m) != 1 || m[0] != "hollow-kubelet" {
		t.Errorf("CSINode %s managed by %v, want only the kubelet", nodeName, m)
	}
	migrated := csiNode.Annotations["storage.alpha.kubernetes.io/migrated-plugins"]
	if !strings.Contains(migrated, "kubernetes.io/gce-pd") {
		t.Errorf("CSINode %s migrated-plugins = %q, want kubernetes.io/gce-pd in it", nodeName, migrated)
	}
	for _, d := range s.Drivers() {
		found := false
		for _, cd := range csiNode.Spec.Drivers {
			if cd.Name == d.Name {
				found = true
				if cd.NodeID != d.Name {
					t.Errorf("CSINode %s driver %s nodeID = %q, want the mock's %q", nodeName, d.Name, cd.NodeID, d.Name)
				}
			}
		}
		if !found {
			t.Errorf("CSINode %s lacks driver %s: %+v", nodeName, d.Name, csiNode.Spec.Drivers)
		}
	}
}

func managers(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		if !hasString(out, f.Manager) {
			out = append(out, f.Manager)
		}
	}
	return out
}

// fieldManagers returns the managers that own field (a FieldsV1 key such as "f:name").
func fieldManagers(fields []metav1.ManagedFieldsEntry, field string) []string {
	var out []string
	for _, f := range fields {
		if f.FieldsV1 != nil && strings.Contains(f.FieldsV1.GetRawString(), `"`+field+`"`) && !hasString(out, f.Manager) {
			out = append(out, f.Manager)
		}
	}
	return out
}

func uniqueNames(names []v1.UniqueVolumeName) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return out
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// figures reports latency percentiles in the suite's output.
func figures(t *testing.T, what string, ds []time.Duration, ps ...float64) {
	t.Helper()
	parts := []string{fmt.Sprintf("n=%d", len(ds))}
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("p%g=%s", p, harness.Percentile(ds, p).Round(time.Millisecond)))
	}
	line := fmt.Sprintf("e2e figures: %s: %s", what, strings.Join(parts, " "))
	t.Log(line)
	fmt.Println(line)
}
