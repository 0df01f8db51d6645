package kcm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// cluster is one test's objects: a namespace of its own and node names derived from it.
type cluster struct {
	t       *testing.T
	cp      *framework.ControlPlane
	ns      string
	kubelet simulator.Kubelet
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cp := framework.Get(t)
	ns, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, cp: cp, ns: ns.Name, kubelet: simulator.Kubelet{Client: cp.Client}}
}

// node registers a managed node (controller-managed-attach-detach) named after the test's
// namespace; with drivers it also reports a CSINode listing them (no migrated plugins).
func (c *cluster) node(suffix string, drivers ...string) string {
	c.t.Helper()
	name := c.ns + "-" + suffix
	if _, err := c.kubelet.RegisterNode(c.t.Context(), name, true); err != nil {
		c.t.Fatal(err)
	}
	if len(drivers) > 0 {
		if err := c.kubelet.ReportCSINode(c.t.Context(), name, "", drivers...); err != nil {
			c.t.Fatal(err)
		}
	}
	return name
}

// attacher runs a simulated external-attacher for driver until the test ends.
func (c *cluster) attacher(driver string) {
	c.t.Helper()
	a := &simulator.ExternalAttacher{Client: c.cp.Client, Drivers: []string{driver}}
	if err := a.Run(c.t.Context()); err != nil {
		c.t.Fatal(err)
	}
}

// pod creates a pod scheduled to node (there is no scheduler) using a claim bound to pv.
func (c *cluster) pod(name, node string, pv *v1.PersistentVolume) {
	c.t.Helper()
	ctx := c.t.Context()
	claim, err := simulator.BindNewClaim(ctx, c.cp.Client, c.ns, name+"-data", pv)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.cp.Client.CoreV1().Pods(c.ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) deletePod(name string) {
	c.t.Helper()
	zero := int64(0)
	if err := c.cp.Client.CoreV1().Pods(c.ns).Delete(c.t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		c.t.Fatal(err)
	}
}

func csiPV(name, driver, handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}},
	}
}

// listed reports whether node status.volumesAttached lists unique.
func (c *cluster) listed(ctx context.Context, node, unique string) (bool, string) {
	n, err := c.cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, av := range n.Status.VolumesAttached {
		if string(av.Name) == unique {
			return true, ""
		}
	}
	return false, fmt.Sprintf("node %s lists %v", node, n.Status.VolumesAttached)
}

// attachedCSI waits until adc attached driver's volume handle to node: the VolumeAttachment
// named as the kubelet names it is attached and node status lists the volume.
func (c *cluster) attachedCSI(node, driver, handle string, timeout time.Duration) {
	c.t.Helper()
	va, unique := vaName(handle, driver, node), simulator.CSIUniqueName(driver, handle)
	framework.Eventually(c.t.Context(), c.t, "VolumeAttachment "+va+" attached and "+unique+" listed in node status", timeout, func(ctx context.Context) (bool, string) {
		got, err := c.cp.Client.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if got.Spec.NodeName != node || got.Spec.Attacher != driver {
			return false, fmt.Sprintf("VolumeAttachment is for node %q, attacher %q", got.Spec.NodeName, got.Spec.Attacher)
		}
		if !got.Status.Attached {
			return false, "not attached yet"
		}
		return c.listed(ctx, node, unique)
	})
}

// events returns the Events with reason about the pod, as "<source component>: <message>".
func (c *cluster) events(ctx context.Context, pod, reason string) ([]string, error) {
	list, err := c.cp.Client.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": pod, "reason": reason}.String()})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Source.Component+": "+e.Message)
	}
	return out, nil
}

// vaName is the VolumeAttachment name of a CSI volume on a node, as the kubelet computes it
// to wait for the attach.
func vaName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// sample returns the value of the first sample of metric name in a Prometheus text
// exposition whose labels include all of want.
func sample(body, name string, want map[string]string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // a longer metric name
		}
		ok := true
		for k, v := range want {
			if !strings.Contains(","+labels+",", ","+k+"="+strconv.Quote(v)+",") {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		return v, true
	}
	return 0, false
}
