package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// podTimeout bounds how long a test waits for its pods: the kubelets report volumesInUse
// every second, attaches take well under a second, so this is only a failure bound.
const podTimeout = 90 * time.Second

// Scenario 1: three nodes, thirty pods with CSI PVs, every pod Running, and the contract as
// the real kubelet and external-attacher see it.
func TestThirtyPodsOnThreeNodes(t *testing.T) {
	s := shared
	failWithLogs(t, s)
	ctx := t.Context()
	ns := lifecycleNamespace(t, s, "s1-thirty-pods")
	nodes := s.Nodes()
	var want []attachment
	var names []string
	for i := range 30 {
		name := fmt.Sprintf("vol-%d", i)
		pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: name, Driver: harness.DefaultDriver, Handle: ns + "-" + name})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, attachment{pv: pv.Name, driver: harness.DefaultDriver, handle: ns + "-" + name, node: nodes[i%len(nodes)]})
	}
	for i, a := range want {
		pod := fmt.Sprintf("app-%d", i)
		timeline.PodCreated(ns, pod, time.Now())
		if _, err := s.CreatePod(ctx, ns, pod, a.node, fmt.Sprintf("vol-%d", i)); err != nil {
			t.Fatal(err)
		}
		names = append(names, pod)
	}
	if err := s.WaitPodsRunning(ctx, ns, names, podTimeout); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		checkKubeletWrote(ctx, t, s, n)
	}
	publishes := 0
	for _, a := range want {
		publishes += checkAttached(ctx, t, s, a)
	}
	t.Logf("the external-attacher called ControllerPublishVolume %d times for %d volumes", publishes, len(want))
	figures(t, "pod created -> Running (30 pods, 3 nodes)", timeline.PodStartup(), 50, 90)
	figures(t, "VolumeAttachment attached -> listed in node status", timeline.AttachedToListed(), 50, 99)
	before, listed := timeline.InUseBeforeListed()
	t.Logf("the kubelets reported %d of %d volumes in volumesInUse before adc listed them in volumesAttached", before, listed)
}

// Scenario 2: an in-tree gce-pd PV, migrated: attached through the CSI driver
// pd.csi.storage.gke.io with the handle csi-translation-lib gives it, the pod Running.
func TestMigratedGCEPDAttachesThroughCSI(t *testing.T) {
	s := shared
	failWithLogs(t, s)
	ctx := t.Context()
	ns := lifecycleNamespace(t, s, "s2-migrated-gce-pd")
	disk := ns + "-disk-1"
	pv, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "data", GCEPD: disk})
	if err != nil {
		t.Fatal(err)
	}
	node := s.Nodes()[1]
	timeline.PodCreated(ns, "app", time.Now())
	if _, err := s.CreatePod(ctx, ns, "app", node, "data"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"app"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	checkAttached(ctx, t, s, attachment{pv: pv.Name, driver: harness.GCEPDDriver, handle: harness.GCEPDHandle(disk), node: node})
}

// Scenario 8: a driver whose CSIDriver says attachRequired=false: no VolumeAttachment, nothing
// in node status.volumesAttached, the kubelet stages and publishes, the pod Running.
func TestAttachNotRequiredDriver(t *testing.T) {
	s := shared
	failWithLogs(t, s)
	ctx := t.Context()
	ns := lifecycleNamespace(t, s, "s8-no-attach")
	handle := ns + "-vol"
	if _, err := s.CreateVolume(ctx, ns, harness.Volume{Name: "data", Driver: NoAttachDriver, Handle: handle}); err != nil {
		t.Fatal(err)
	}
	node := s.Nodes()[2]
	if _, err := s.CreatePod(ctx, ns, "app", node, "data"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPodsRunning(ctx, ns, []string{"app"}, podTimeout); err != nil {
		t.Fatal(err)
	}
	vas, err := s.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, va := range vas.Items {
		if va.Spec.Attacher == NoAttachDriver {
			t.Errorf("VolumeAttachment %s for the attachRequired=false driver: %+v", va.Name, va.Spec)
		}
	}
	n, err := s.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unique := harness.UniqueName(NoAttachDriver, handle)
	for _, av := range n.Status.VolumesAttached {
		if string(av.Name) == unique {
			t.Errorf("node %s lists %s in volumesAttached; nothing is attached for this driver", node, unique)
		}
	}
	t.Logf("node %s volumesInUse has the attachRequired=false volume: %v", node, hasString(uniqueNames(n.Status.VolumesInUse), unique))
	calls, err := s.Driver(NoAttachDriver).CallsFor(handle)
	if err != nil {
		t.Fatal(err)
	}
	var staged, published bool
	for _, c := range calls {
		switch c.Method {
		case "ControllerPublishVolume", "ControllerUnpublishVolume":
			t.Errorf("%s called for the attachRequired=false driver: %+v", c.Method, c)
		case "NodeStageVolume":
			staged = staged || c.Code == "OK" && c.Node == node
		case "NodePublishVolume":
			published = published || c.Code == "OK" && c.Node == node
		}
	}
	if !staged || !published {
		t.Errorf("kubelet of %s did not stage and publish %s: %+v", node, handle, calls)
	}
}
