package dashboard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2/ktesting"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/metrics"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

const (
	gcePlugin = "kubernetes.io/gce-pd"
	ebsPlugin = "kubernetes.io/aws-ebs"
	pxPlugin  = "kubernetes.io/portworx-volume"

	kubeletVersion    = "v1.36.3"
	oldKubeletVersion = "v1.35.0"
	script            = "<script>alert(1)</script>"
)

// nodeDrivers are the CSI drivers every seeded node's kubelet registers in its CSINode: adc
// attaches nothing through a driver a node does not list.
var nodeDrivers = []string{"pd.csi.storage.gke.io", "ebs.csi.aws.com", "pxd.portworx.com"}

// rolloutCluster is the seeded mid-rollout cluster and the controller running on it.
type rolloutCluster struct {
	ns     string
	ctrl   *adc.Controller
	config migration.Config
	// node names by role
	migrated, hostile, notMigrated, unknown, unmanaged string
}

// seedCluster seeds, in a fresh namespace, four managed nodes in every rollout state and one
// unmanaged node, with aws-ebs migration off and portworx complete:
//
//	<ns>-a  CSINode lists gce-pd, aws-ebs (version skew) and portworx
//	<ns>-b  CSINode lists gce-pd and "<script>alert(1)</script>" (a node note)
//	<ns>-c  CSINode without migrated plugins (gce-pd in-tree, no attacher: held)
//	<ns>-d  no CSINode (gce-pd unknown: wait)
//	<ns>-u  not managed (its pod must not count)
//
// Pods: on a, a GCE PD plus a configMap (csi, not-attachable) and an EBS volume (error,
// skew); on b, a GCE PD whose attach the simulated external-attacher fails with the script
// payload; a RWO GCE PD used by pods on a and b (one attaches, the other is a multi-attach
// block); on c and d one GCE PD each; on u one GCE PD.
// Expected for gce-pd: 2 migrated, 1 not migrated, 1 unknown of 4. Pairs: csi 4,
// not-attachable 1, in-tree 1, wait 1, error 1. gce-pd volumes by path (controller): csi 4,
// held 2 (in-tree on c without an in-tree attacher, wait on d); readiness for complete: c and
// d block, app-c and app-d would change path. portworx is complete with 3 of 4 kubelets
// not migrated: a skew warning.
func seedCluster(t *testing.T) *rolloutCluster {
	t.Helper()
	cp := framework.Get(t)
	_, ctx := ktesting.NewTestContext(t)
	// The simulators live as long as ctx: end them with the test, or a later run (go test
	// -count=2) would have this run's external-attacher attach its volumes.
	ctx, cancelAll := context.WithCancel(ctx)
	t.Cleanup(cancelAll)
	client := cp.Client
	nsObj, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dash-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	ns := nsObj.Name
	rc := &rolloutCluster{ns: ns, migrated: ns + "-a", hostile: ns + "-b", notMigrated: ns + "-c", unknown: ns + "-d", unmanaged: ns + "-u"}
	nodes := []string{rc.migrated, rc.hostile, rc.notMigrated, rc.unknown, rc.unmanaged}
	// Registered first, so it runs last: after the controller stopped. Node counts are
	// cluster-wide, so a second run (go test -count=2) must not see this run's nodes.
	t.Cleanup(func() { cleanup(t, client, ns, nodes) })
	kubelet := simulator.Kubelet{Client: client}
	for _, n := range []string{rc.migrated, rc.hostile, rc.notMigrated, rc.unknown} {
		if _, err := kubelet.RegisterNode(ctx, n, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kubelet.RegisterNode(ctx, rc.unmanaged, false); err != nil {
		t.Fatal(err)
	}
	// Kubelet versions for the node view: c runs an older kubelet.
	for _, n := range []string{rc.migrated, rc.hostile, rc.notMigrated, rc.unknown} {
		version := kubeletVersion
		if n == rc.notMigrated {
			version = oldKubeletVersion
		}
		setKubeletVersion(t, ctx, client, n, version)
	}
	for node, migrated := range map[string]string{
		rc.migrated:    ebsPlugin + "," + gcePlugin + "," + pxPlugin,
		rc.hostile:     gcePlugin + "," + script,
		rc.notMigrated: "",
		rc.unmanaged:   gcePlugin,
	} {
		if err := kubelet.ReportCSINode(ctx, node, migrated, nodeDrivers...); err != nil {
			t.Fatal(err)
		}
	}

	badPV := ns + "-pd-bad"
	attacher := &simulator.ExternalAttacher{Client: client, AttachError: func(va *storagev1.VolumeAttachment) string {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == badPV {
			return "rpc error: code = Internal desc = " + script
		}
		return ""
	}}
	if err := attacher.Run(ctx); err != nil {
		t.Fatalf("starting the simulated external-attacher: %v", err)
	}

	claim := func(name string, src v1.PersistentVolumeSource) string {
		return boundClaim(t, ctx, client, ns, name, src)
	}
	gce := func(name string) string {
		return claim(name, v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name}})
	}
	configMap := v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	shared := gce(ns + "-pd-shared")
	createPod(t, ctx, client, ns, "app-a", rc.migrated, []string{gce(ns + "-pd-a")}, configMap)
	createPod(t, ctx, client, ns, "app-ebs", rc.migrated, []string{claim(ns+"-ebs", v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0dash"}})})
	createPod(t, ctx, client, ns, "app-b", rc.hostile, []string{gce(ns + "-pd-bad")})
	createPod(t, ctx, client, ns, "shared-a", rc.migrated, []string{shared})
	createPod(t, ctx, client, ns, "shared-b", rc.hostile, []string{shared})
	createPod(t, ctx, client, ns, "app-c", rc.notMigrated, []string{gce(ns + "-pd-c")})
	createPod(t, ctx, client, ns, "app-d", rc.unknown, []string{gce(ns + "-pd-d")})
	createPod(t, ctx, client, ns, "app-u", rc.unmanaged, []string{gce(ns + "-pd-u")})

	// The controller, as a host runs it: its own informer factory, the process's metrics.
	m, err := metrics.Legacy()
	if err != nil {
		t.Fatal(err)
	}
	rc.config = migration.DefaultConfig().WithModes(map[string]migration.Mode{ebsPlugin: migration.ModeOff, pxPlugin: migration.ModeComplete})
	opts := adc.Options{
		Migration: rc.config,
		Observer:  m,
		Backoff:   adc.BackoffOptions{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: 5 * time.Second, RandomizationFactor: 0.1},
	}
	runCtx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := adc.New(client, cp.Dynamic, factory, opts)
	if err != nil {
		cancel()
		t.Fatalf("creating the controller: %v", err)
	}
	rc.ctrl = ctrl
	m.SetSource(func() rollout.ControllerView { return ctrl })
	factory.Start(runCtx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctrl.Run(runCtx, 4) }()
	t.Cleanup(func() {
		m.SetSource(nil)
		cancel()
		wg.Wait()
		factory.Shutdown()
	})

	// Steady state: every managed pair decided, the failed attach and the multi-attach seen.
	var last string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r := rollout.FromController(ctrl, time.Now())
		failed := false
		for _, op := range r.Operations {
			failed = failed || strings.Contains(op.Error, script)
		}
		last = fmt.Sprintf("mechanisms %v, held %d, problems %d, operations %+v (failed attach seen: %v)", r.VolumesByMechanism, len(r.Held), len(r.Problems), r.Operations, failed)
		return r.VolumesByMechanism[migration.MechanismCSI] == 4 && len(r.Held) == 3 && len(r.Problems) == 2 && failed, nil
	})
	if err != nil {
		t.Fatalf("the seeded cluster did not settle: %v; last: %s", err, last)
	}
	return rc
}
