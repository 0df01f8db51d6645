package kcm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/kcm"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/test/integration/framework"
)

// adc inside kube-controller-manager attaches a CSI volume while every other controller runs:
// the VolumeAttachment has the name the kubelet waits for, node status lists the volume, and
// the built-in attach/detach controller is not running.
func TestCSIVolumeAttachedByADC(t *testing.T) {
	i := operatorKCM(t)
	c := newCluster(t)
	const driver = "csi.kcm.example.com"
	c.attacher(driver)
	node := c.node("n1", driver)
	c.pod("app", node, csiPV(c.ns+"-vol", driver, c.ns+"-handle"))
	c.attachedCSI(node, driver, c.ns+"-handle", 30*time.Second)

	out := i.out.String()
	for _, want := range []string{
		`"Warning: controller is disabled" controller="persistentvolume-attach-detach-controller"`,
		`"Replacing the built-in attach/detach controller"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kube-controller-manager's log lacks %s", want)
		}
	}
}

// A node without CSINode has not reported its migration state: adc holds a migratable in-tree
// volume there (no VolumeAttachment, nothing in node status) and says so with one Event, where
// upstream's controller would attach it through the CSI driver.
func TestNodeWithoutCSINodeHolds(t *testing.T) {
	operatorKCM(t)
	c := newCluster(t)
	node := c.node("no-csinode") // no CSINode
	c.pod("app", node, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: c.ns + "-pd"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: c.ns + "-disk"}}},
	})
	ctx := t.Context()
	framework.Eventually(ctx, t, "adc's "+adc.ReasonWaitingForNode+" Event on the pod", 20*time.Second, func(ctx context.Context) (bool, string) {
		ev, err := c.events(ctx, "app", adc.ReasonWaitingForNode)
		if err != nil {
			return false, err.Error()
		}
		return len(ev) == 1 && strings.HasPrefix(ev[0], "adc: "), fmt.Sprint(ev)
	})
	vas, err := c.cp.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, va := range vas.Items {
		if va.Spec.NodeName == node {
			t.Errorf("VolumeAttachment %s created for node %s, which has not reported its migration state", va.Name, node)
		}
	}
	n, err := c.cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Status.VolumesAttached) != 0 {
		t.Errorf("node %s lists %v; want nothing attached while adc holds", node, n.Status.VolumesAttached)
	}
}

// An iSCSI volume has no CSI migration: adc attaches it the in-tree way, through
// kube-controller-manager's own iSCSI plugin (its attach is a no-op on the controller side),
// lists it in node status under the in-tree unique name, records the operation in
// kube-controller-manager's storage_operation_duration_seconds, and detaches it through the
// plugin once the pod is gone.
func TestInTreeISCSIThroughKCMPlugin(t *testing.T) {
	i := operatorKCM(t)
	c := newCluster(t)
	node := c.node("iscsi")
	const portal, iqn = "192.0.2.10:3260", "iqn.2003-01.io.k8s:adc-kcm"
	c.pod("db", node, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: c.ns + "-iscsi"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			ISCSI: &v1.ISCSIPersistentVolumeSource{TargetPortal: portal, IQN: iqn, Lun: 0, FSType: "ext4"}}},
	})
	unique := fmt.Sprintf("kubernetes.io/iscsi/%s:%s:0", portal, iqn)
	ctx := t.Context()
	framework.Eventually(ctx, t, unique+" listed in node status", 20*time.Second, func(ctx context.Context) (bool, string) {
		return c.listed(ctx, node, unique)
	})
	if ev, err := c.events(ctx, "db", adc.ReasonNoInTreeAttacher); err != nil || len(ev) != 0 {
		t.Errorf("%s Events %v (err %v): adc has kube-controller-manager's plugins as its in-tree attacher", adc.ReasonNoInTreeAttacher, ev, err)
	}
	_, body, err := i.get(ctx, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	attaches := map[string]string{"volume_plugin": "kubernetes.io/iscsi", "operation_name": metrics.OperationAttach, "status": metrics.StatusSuccess}
	if n, ok := sample(body, metrics.OperationDurationName+"_count", attaches); !ok || n < 1 {
		t.Errorf("%s_count%v = %v (found %v), want at least 1", metrics.OperationDurationName, attaches, n, ok)
	}

	c.deletePod("db")
	framework.Eventually(ctx, t, unique+" detached (gone from node status)", 20*time.Second, func(ctx context.Context) (bool, string) {
		listed, msg := c.listed(ctx, node, unique)
		return !listed, msg
	})
}

// kube-controller-manager serves adc's health and metrics: /healthz?verbose lists adc's
// check, /metrics has adc's own metrics (with the value of one of its --adc-* flags) and
// upstream's attach/detach names with adc's values.
func TestHealthzAndMetrics(t *testing.T) {
	i := operatorKCM(t)
	c := newCluster(t)
	const driver = "metrics.csi.kcm.example.com"
	c.attacher(driver)
	node := c.node("n1", driver)
	c.pod("app", node, csiPV(c.ns+"-vol", driver, c.ns+"-handle"))
	c.attachedCSI(node, driver, c.ns+"-handle", 30*time.Second)
	ctx := t.Context()

	code, body, err := i.get(ctx, "/healthz?verbose")
	if err != nil || code != 200 || !strings.Contains(body, adcHealthy) || !strings.Contains(body, "[+]leaderElection ok") {
		t.Errorf("/healthz?verbose = %d (err %v), want 200 listing %q and the leader election:\n%s", code, err, adcHealthy, body)
	}

	plugin := "kubernetes.io/csi:" + driver
	for _, m := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		// upstream's names, adc's values
		{metrics.TotalVolumesName, map[string]string{"plugin_name": plugin, "state": metrics.StateActual}, 1},
		{metrics.TotalVolumesName, map[string]string{"plugin_name": plugin, "state": metrics.StateDesired}, 1},
		{metrics.OperationDurationName + "_count", map[string]string{"volume_plugin": plugin, "operation_name": metrics.OperationAttach, "status": metrics.StatusSuccess}, 1},
		// adc's own, set by --adc-migration
		{metrics.ModeName, map[string]string{"plugin": "kubernetes.io/portworx-volume", "mode": "complete"}, 1},
		{metrics.DecisionsName, map[string]string{"plugin": plugin}, 1},
		// adc's work queues in kube-controller-manager's workqueue metrics
		{"workqueue_adds_total", map[string]string{"name": "adc_node"}, 1},
	} {
		framework.Eventually(ctx, t, fmt.Sprintf("/metrics: %s%v >= %v", m.name, m.labels, m.min), 10*time.Second, func(ctx context.Context) (bool, string) {
			_, body, err := i.get(ctx, "/metrics")
			if err != nil {
				return false, err.Error()
			}
			v, ok := sample(body, m.name, m.labels)
			return ok && v >= m.min, fmt.Sprintf("found %v, value %v", ok, v)
		})
	}
}

// Inside kube-controller-manager adc's paths ride on the host's secure port and its
// delegated authorization, unchanged (docs/kube-controller-manager.md, "Permissions"): the
// health check is anonymous, adc's own check under /healthz/ and /metrics need a grant, and
// the shipped ClusterRole adc-metrics-reader (deploy/kubernetes/access.yaml) is the grant
// that lets a scraper read adc's metrics there too: nonResourceURLs are the same on every
// component that delegates authorization.
func TestMetricsNeedAuthorization(t *testing.T) {
	i := operatorKCM(t)
	ctx := t.Context()
	client := framework.Get(t).Client
	role, err := framework.ShippedClusterRole("adc-metrics-reader")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	nobody := framework.NewReader(ctx, t, client, "kcm-readers", "nobody")
	scraper := framework.NewReader(ctx, t, client, "kcm-readers", "scraper", role.Name)
	framework.WaitAccess(ctx, t, client, scraper.User(), "/metrics", true)
	framework.Eventually(ctx, t, "adc runs in kube-controller-manager", 60*time.Second, i.runsADC)

	base := fmt.Sprintf("https://127.0.0.1:%d", i.port)
	insecure := framework.InsecureTLSClient(t)
	for _, tc := range []struct {
		who, token, path string
		want             int
	}{
		{"anonymous", "", "/healthz", http.StatusOK},
		// kube-controller-manager lets anonymous requests reach its authorizer, which
		// refuses system:anonymous (403; adc's own port answers 401).
		{"anonymous", "", "/metrics", http.StatusForbidden},
		{"anonymous", "", "/healthz/" + adc.ControllerManagerName, http.StatusForbidden},
		{"ServiceAccount without a grant", nobody.Token, "/metrics", http.StatusForbidden},
		{"scraper (adc-metrics-reader)", scraper.Token, "/metrics", http.StatusOK},
		{"scraper (adc-metrics-reader)", scraper.Token, "/healthz/" + adc.ControllerManagerName, http.StatusForbidden},
	} {
		code, body := framework.GetWithToken(ctx, insecure, base+tc.path, tc.token)
		if code != tc.want {
			t.Errorf("%s GET %s = %d, want %d: %.200s", tc.who, tc.path, code, tc.want, body)
		}
		if tc.path == "/metrics" && code == http.StatusOK && !strings.Contains(body, metrics.ModeName) {
			t.Errorf("%s GET /metrics lacks adc's %s", tc.who, metrics.ModeName)
		}
	}
}

// Leader election is kube-controller-manager's own: of two instances only the leader runs
// adc; SIGKILL it and the other one takes the lease, builds its controllers and its adc
// attaches a volume created after the kill.
func TestLeaderElectionFailover(t *testing.T) {
	// This test needs to be the only adc on the cluster.
	stopOperatorKCM()
	c := newCluster(t)
	const driver = "failover.csi.kcm.example.com"
	c.attacher(driver)
	node := c.node("n1", driver)
	lease := c.ns // fresh, so the first instance takes it at once
	a := startT(t, "a", options{lease: lease})
	b := startT(t, "b", options{lease: lease})

	ctx := t.Context()
	var leader, standby *instance
	framework.Eventually(ctx, t, "one instance leading with adc healthy", 60*time.Second, func(ctx context.Context) (bool, string) {
		for _, p := range [][2]*instance{{a, b}, {b, a}} {
			if ok, _ := p[0].runsADC(ctx); ok {
				leader, standby = p[0], p[1]
				return true, ""
			}
		}
		return false, "neither /healthz?verbose lists adc"
	})
	if ok, body := standby.runsADC(ctx); ok {
		t.Fatalf("both instances run adc; standby %s /healthz?verbose:\n%s", standby.name, body)
	}
	c.pod("before", node, csiPV(c.ns+"-before", driver, c.ns+"-before"))
	c.attachedCSI(node, driver, c.ns+"-before", 30*time.Second)

	leader.kill()
	killed := time.Now()
	c.pod("after", node, csiPV(c.ns+"-after", driver, c.ns+"-after"))
	framework.Eventually(ctx, t, "standby "+standby.name+" leading with adc healthy", 60*time.Second, standby.runsADC)
	t.Logf("standby %s runs adc %s after the leader was killed (lease duration 3s)", standby.name, time.Since(killed).Round(100*time.Millisecond))
	c.attachedCSI(node, driver, c.ns+"-after", 30*time.Second)
	// The volume attached before the failover stays attached and listed.
	c.attachedCSI(node, driver, c.ns+"-before", 5*time.Second)
}

// The two attach/detach controllers never run together, and adc's flags are checked at start:
// kube-controller-manager refuses to start, saying which flag to change.
func TestMisconfigurationRefused(t *testing.T) {
	for n, tc := range []struct {
		name  string
		o     options
		wants []string
	}{
		{
			name: "adc and the built-in attach/detach controller both enabled",
			o:    options{controllers: "*," + adc.ControllerManagerName},
			wants: []string{
				"must not both run",
				"-persistentvolume-attach-detach-controller to --controllers",
			},
		},
		{
			name:  "bad --adc-migration",
			o:     options{extra: []string{"--" + kcm.FlagMigration, "kubernetes.io/gce-pd=sideways"}},
			wants: []string{`invalid argument "kubernetes.io/gce-pd=sideways" for "--adc-migration" flag`, "unknown mode"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.lease = fmt.Sprintf("kcm-refused-%d", n)
			i := startT(t, "refused", tc.o)
			select {
			case <-i.exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("kube-controller-manager still running after 60s; want it to refuse to start")
			}
			if i.err == nil {
				t.Errorf("kube-controller-manager exited with status 0; want a failure")
			}
			out := i.out.String()
			for _, want := range tc.wants {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q; last lines:\n%s", want, i.tail(30))
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, tc.wants[0]) {
					t.Logf("exit %v: %s", i.err, line)
					break
				}
			}
		})
	}
}
