package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/faultproxy"
	"github.com/migration-aware/adc/test/simulator"
)

// The tests of this file put a fault proxy (test/faultproxy) between adc and the API server
// and replay what an API server restart does to informers: watches that come back one by one,
// relists after 410 Gone, objects created and deleted while a watch was away. The simulated
// kubelet and attacher talk to the API server directly; only adc's view is disturbed.

// faultProxy starts a fault proxy in front of the control plane for the test, and a
// protobuf clientset through it, as adc's own client is configured.
func (e *testEnv) faultProxy() (*faultproxy.Proxy, kubernetes.Interface) {
	e.t.Helper()
	p, err := faultproxy.New(e.cp.Config)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := p.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = p.Close() })
	cfg := p.Config()
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return p, client
}

// expire ends adc's watches of the resources with 410 Gone and waits until its informers
// are relisting them (a relist of a frozen resource stays held until Heal).
func (e *testEnv) expire(p *faultproxy.Proxy, resources ...string) {
	e.t.Helper()
	since := time.Now()
	for _, r := range resources {
		p.Expire(r)
	}
	for _, r := range resources {
		e.eventually("adc's informer relisting "+r, 10*time.Second, func() (bool, string) {
			return p.RelistedSince(r, since), ""
		})
	}
}

// After an API server restart adc's Node watch came back 11 s after its Pod and
// VolumeAttachment watches, and adc decided detaches on its pre-outage Node: a copy without
// its own status writes and without the kubelet's volumesInUse. Issue #14, defect 1.
//
// Replayed here: adc's Node list/watch is frozen (then expired, so it relists when it heals)
// while three pods attach on the node. Then, with the Node view still frozen:
//   - "mounted": its pod is deleted but the kubelet still reports the volume in use
//     (unmounting): it must stay attached and listed;
//   - "unmounted": its pod is deleted and the kubelet unmounted it: it may be detached, but only
//     after node status stopped listing it;
//   - "running": its pod keeps running: it stays attached and listed.
//
// When the proxy heals and the kubelet finishes unmounting, everything converges.
func TestNoDetachOnStaleNodeView(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	proxy, client := e.faultProxy()
	node := e.node("n1", true)
	e.csiNode(node, "", testDriver)
	ctrl := e.startControllerWith(client, adc.Options{})

	type vol struct{ pod, handle, va, unique string }
	vols := map[string]*vol{}
	unique := map[string]string{}
	for _, name := range []string{"mounted", "unmounted", "running"} {
		v := &vol{pod: name, handle: "stale-" + name}
		v.va, v.unique = vaName(v.handle, testDriver, node), csiUnique(testDriver, v.handle)
		vols[name] = v
		unique[v.va] = v.unique
	}
	order := e.recordDetachOrder(node, unique)

	proxy.Freeze("nodes")
	for _, v := range vols {
		e.pod(v.pod, node, []string{e.boundClaim(e.csiPV(v.pod, testDriver, v.handle))})
	}
	for _, v := range vols {
		e.eventually("volume "+v.pod+" listed in node status (adc writes, its Node view is frozen)", 10*time.Second, e.listedOnNode(node, v.unique))
	}
	// The kubelet mounts what is listed; adc does not see it.
	if err := e.kubelet.SetVolumesInUse(e.ctx, node, vols["mounted"].unique, vols["running"].unique); err != nil {
		t.Fatal(err)
	}
	e.deletePod("mounted")
	e.deletePod("unmounted")

	e.eventually("the unmounted volume detached, after leaving node status", 10*time.Second, e.vaGone(vols["unmounted"].va))
	e.consistently("the mounted volume's VolumeAttachment kept while the kubelet reports it in use", 2*time.Second, func() (bool, string) {
		ok, msg := e.vaExists(vols["mounted"].va)()
		if !ok {
			return false, msg
		}
		return e.listedOnNode(node, vols["mounted"].unique)()
	})

	// The API server "restarts": every watch of adc's ends with 410 Gone; Nodes come back last.
	e.expire(proxy, "pods", "volumeattachments", "nodes")
	proxy.Heal("pods")
	proxy.Heal("volumeattachments")
	e.consistently("nothing in use detached while only Pods and VolumeAttachments are back", 2*time.Second, e.vaExists(vols["mounted"].va))
	proxy.Heal("nodes")
	e.consistently("nothing in use detached once the Node view is back", time.Second, e.vaExists(vols["mounted"].va))

	// The kubelet finishes unmounting: now the volume goes, status first.
	if err := e.kubelet.SetVolumesInUse(e.ctx, node, vols["running"].unique); err != nil {
		t.Fatal(err)
	}
	e.eventually("the mounted volume detached after its unmount", 10*time.Second, e.vaGone(vols["mounted"].va))
	e.eventually("node status lists only the running pod's volume", 10*time.Second, func() (bool, string) {
		names := e.attachedNames(node)
		return len(names) == 1 && names[0] == vols["running"].unique, ""
	})
	e.consistently("the running pod's volume stays", time.Second, e.vaExists(vols["running"].va))
	e.pairIs(ctrl.Controller, node, "running", "data-0", 5*time.Second, func(s readmodel.PairState) bool { return s.Phase == readmodel.PhaseAttached })

	checked, bad := order.check()
	for _, b := range bad {
		t.Error(b)
	}
	if checked != 2 {
		t.Errorf("checked %d VolumeAttachment deletions, want 2", checked)
	}
	t.Logf("%d deletions checked in revision order; %d fresh Node GETs by adc", checked, proxy.Count("get", "nodes"))
}

// A VolumeAttachment adc created and that was deleted while adc's VolumeAttachment watch was
// away (its events dropped, the informer relisting after 410 Gone) never shows up in any event.
// adc's ReadWriteOnce reservation of the volume for that node must end with the relist, not
// stay forever. Issue #14, defect 3: 4 pods never got a VolumeAttachment after a 27 s gap.
func TestReservationEndsWhenVolumeAttachmentVanishedInWatchGap(t *testing.T) {
	e := newEnv(t)
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{testDriver}})
	proxy, client := e.faultProxy()
	a, b := e.node("a", true), e.node("b", true)
	e.csiNode(a, "", testDriver)
	e.csiNode(b, "", testDriver)
	e.startControllerWith(client, adc.Options{})
	claim := e.boundClaim(e.csiPV("rwo", testDriver, "gap-1"))
	onA, onB := vaName("gap-1", testDriver, a), vaName("gap-1", testDriver, b)

	proxy.Freeze("volumeattachments")
	e.pod("first", a, []string{claim})
	e.eventually("VolumeAttachment on node a created (unseen by adc's informer)", 10*time.Second, e.vaExists(onA))
	e.deletePod("first")
	e.eventually("VolumeAttachment on node a deleted by adc (unseen by its informer)", 10*time.Second, e.vaGone(onA))

	// Its events are lost: the watch ends with 410 Gone and the informer relists.
	e.expire(proxy, "volumeattachments")
	proxy.Heal("volumeattachments")

	e.pod("second", b, []string{claim})
	e.eventually("the ReadWriteOnce volume attached to node b", 10*time.Second, e.vaExists(onB))
	e.eventually("and listed there", 10*time.Second, e.listedOnNode(b, csiUnique(testDriver, "gap-1")))
}
