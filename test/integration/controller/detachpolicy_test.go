package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/migration-aware/adc/pkg/adc"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/test/simulator"
)

// detachPolicyCRD reads the DetachPolicy CRD manifest shipped in deploy/crds.
func detachPolicyCRD(t *testing.T) *unstructured.Unstructured {
	return shippedCRD(t, "adc.migration-aware.io_detachpolicies.yaml")
}

// applyPolicy creates or replaces a DetachPolicy, as `kubectl apply` would.
func (e *testEnv) applyPolicy(p *detachv1alpha1.DetachPolicy) {
	e.t.Helper()
	api := e.cp.Dynamic.Resource(detachv1alpha1.GroupVersionResource)
	cur, err := api.Get(e.ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		u, err := detachv1alpha1.ToUnstructured(p)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := api.Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("creating DetachPolicy %s: %v", p.Name, err)
		}
		return
	}
	if err != nil {
		e.t.Fatal(err)
	}
	typed, err := detachv1alpha1.FromUnstructured(cur)
	if err != nil {
		e.t.Fatal(err)
	}
	typed.Spec = p.Spec
	u, err := detachv1alpha1.ToUnstructured(typed)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := api.Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("updating DetachPolicy %s: %v", p.Name, err)
	}
}

// policyValid waits until adc wrote the policy's Valid condition with status want and
// returns its message.
func (e *testEnv) policyValid(name string, want metav1.ConditionStatus) string {
	e.t.Helper()
	var msg string
	e.eventually("DetachPolicy "+name+" Valid="+string(want), 10*time.Second, func() (bool, string) {
		u, err := e.cp.Dynamic.Resource(detachv1alpha1.GroupVersionResource).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := detachv1alpha1.FromUnstructured(u)
		if err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(p.Status.Conditions, detachv1alpha1.ConditionValid)
		if c == nil {
			return false, "no Valid condition yet"
		}
		msg = c.Reason + ": " + c.Message
		return c.Status == want && p.Status.ObservedGeneration == p.Generation, msg
	})
	return msg
}

// What DetachPolicies change, against the real API server, with the simulated kubelet
// reporting volumes in use:
//   - evidence a policy accepts (the cloud's shutdown taint on a node that is not Ready)
//     detaches at once, even a volume whose pod is still on the node;
//   - the same taint on a Ready node detaches nothing;
//   - a policy without a timeout holds a volume in use on a node that is not Ready beyond
//     --max-wait-for-unmount, visibly; changing it to a timeout detaches without a restart;
//   - an invalid policy gets Valid=False and an Event, and is ignored.
func TestDetachPolicies(t *testing.T) {
	e := newEnv(t)
	crd := detachPolicyCRD(t)
	removeCRD(e.ctx, t, e.cp.Dynamic, crd.GetName())
	e.installCRD(crd)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		removeCRD(ctx, t, e.cp.Dynamic, crd.GetName())
	})
	cloud, held, other, fenced := e.driverName("dp-cloud"), e.driverName("dp-held"), e.driverName("dp-other"), e.driverName("dp-fence")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{cloud, held, other, fenced}})
	const maxWait = 2 * time.Second
	ctrl := e.startController(adc.Options{MaxWaitForUnmount: maxWait, CRDPollInterval: 100 * time.Millisecond})

	e.applyPolicy(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-cloud"}, Spec: detachv1alpha1.DetachPolicySpec{
		Volumes:  detachv1alpha1.VolumeSelector{Drivers: []string{cloud}},
		Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceCloudShutdown},
		Timeout:  detachv1alpha1.TimeoutNever,
	}})
	e.applyPolicy(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-held"}, Spec: detachv1alpha1.DetachPolicySpec{
		Volumes: detachv1alpha1.VolumeSelector{Drivers: []string{held}},
		Timeout: detachv1alpha1.TimeoutNever,
	}})
	if msg := e.policyValid(e.ns+"-cloud", metav1.ConditionTrue); !strings.Contains(msg, "cloud-shutdown") {
		t.Errorf("Valid condition message %q does not describe the rule", msg)
	}
	e.policyValid(e.ns+"-held", metav1.ConditionTrue)

	shutdownTaint := v1.Taint{Key: migration.CloudShutdownTaint, Effect: v1.TaintEffectNoSchedule}
	t.Run("cloud shutdown on a not-Ready node detaches at once, pod still there", func(t *testing.T) {
		e := e.withT(t)
		down, up := e.node("dp-down", true), e.node("dp-up", true)
		downVA, downUnique := e.attachedCSI("dp-down-app", down, cloud, "h-dp-down")
		upVA, upUnique := e.attachedCSI("dp-up-app", up, cloud, "h-dp-up")
		for node, unique := range map[string]string{down: downUnique, up: upUnique} {
			if err := e.kubelet.SetVolumesInUse(e.ctx, node, unique); err != nil {
				t.Fatal(err)
			}
		}
		// The Ready node gets the taint too (a taint alone proves nothing while the kubelet
		// is up); the lost node is not Ready, then tainted.
		e.taint(up, shutdownTaint)
		if err := e.kubelet.SetReady(e.ctx, down, false, time.Now().Truncate(time.Second)); err != nil {
			t.Fatal(err)
		}
		tainted := time.Now()
		e.taint(down, shutdownTaint)
		e.eventually("the lost node's volume detached, its pod still on the node", 30*time.Second, e.vaGone(downVA))
		t.Logf("detached %s after the shutdown taint", time.Since(tainted).Round(10*time.Millisecond))
		e.eventually("removed from the lost node's status", 10*time.Second, e.notListedOnNode(down, downUnique))
		if msg := e.oneWarningEvent(metav1.NamespaceDefault, down, adc.ReasonForcedDetach, 300*time.Millisecond); !strings.Contains(msg, migration.CloudShutdownTaint) {
			t.Errorf("ForcedDetach message %q does not name the shutdown taint", msg)
		}
		e.pairIs(ctrl.Controller, down, "dp-down-app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
			return s.Phase == readmodel.PhaseReleased && s.Detach != nil && s.Detach.Evidence == migration.EvidenceCloudShutdown
		})
		e.consistently("the Ready node's volume kept despite the taint", maxWait+time.Second, e.keptAttached(upVA, up, upUnique))
	})

	t.Run("a fencing operator's taint, and the out-of-service taint, each detach at once", func(t *testing.T) {
		e := e.withT(t)
		const fenceTaint = "fence.example.com/fenced"
		e.applyPolicy(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-fence"}, Spec: detachv1alpha1.DetachPolicySpec{
			Volumes:  detachv1alpha1.VolumeSelector{Drivers: []string{fenced}},
			Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceFencing, detachv1alpha1.EvidenceOutOfService},
			Fencing:  &detachv1alpha1.Fencing{Taints: []string{fenceTaint}},
			Timeout:  detachv1alpha1.TimeoutNever,
		}})
		e.policyValid(e.ns+"-fence", metav1.ConditionTrue)
		for _, tc := range []struct {
			node     string
			taint    v1.Taint
			evidence migration.Evidence
		}{
			{"dp-fenced", v1.Taint{Key: fenceTaint, Effect: v1.TaintEffectNoExecute}, migration.EvidenceFenced},
			{"dp-oos", v1.Taint{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}, migration.EvidenceOutOfService},
		} {
			node := e.node(tc.node, true)
			va, unique := e.attachedCSI(tc.node+"-app", node, fenced, "h-"+tc.node)
			if err := e.kubelet.SetVolumesInUse(e.ctx, node, unique); err != nil {
				t.Fatal(err)
			}
			if err := e.kubelet.SetReady(e.ctx, node, false, time.Now().Truncate(time.Second)); err != nil {
				t.Fatal(err)
			}
			e.consistently("held (no timeout) before the taint", 500*time.Millisecond, e.keptAttached(va, node, unique))
			tainted := time.Now()
			e.taint(node, tc.taint)
			e.eventually("detached on the "+string(tc.evidence)+" evidence, its pod still there", 30*time.Second, e.vaGone(va))
			t.Logf("%s: detached %s after the taint", tc.evidence, time.Since(tainted).Round(10*time.Millisecond))
			e.pairIs(ctrl.Controller, node, tc.node+"-app", "data-0", 5*time.Second, func(s readmodel.PairState) bool {
				return s.Phase == readmodel.PhaseReleased && s.Detach != nil && s.Detach.Evidence == tc.evidence
			})
		}
	})

	t.Run("no timeout holds beyond max-wait-for-unmount; a timeout set later detaches", func(t *testing.T) {
		e := e.withT(t)
		node := e.node("dp-held", true)
		va, unique := e.inUseAfterPodDeleted(ctrl.Controller, "dp-held-app", node, held, "h-dp-held")
		lost := time.Now().Truncate(time.Second)
		if err := e.kubelet.SetReady(e.ctx, node, false, lost); err != nil {
			t.Fatal(err)
		}
		e.consistently("held by the policy past max-wait-for-unmount", maxWait+2*time.Second, e.keptAttached(va, node, unique))
		var entry *readmodel.PairState
		for _, s := range nodeSnapshot(ctrl.Controller, node) {
			if s.VolumeAttachment == va {
				entry = &s
			}
		}
		if entry == nil || entry.Phase != readmodel.PhaseDetachBlocked || entry.Detach == nil || !entry.Detach.Held || !strings.Contains(entry.Reason, "holds it") {
			t.Errorf("snapshot entry of the held volume = %+v, want detach-blocked, held by the policy", entry)
		}
		if evs := e.events(metav1.NamespaceDefault, node, adc.ReasonDetachHeldByPolicy); len(evs) == 0 {
			t.Errorf("no %s Event on node %s", adc.ReasonDetachHeldByPolicy, node)
		}

		e.applyPolicy(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-held"}, Spec: detachv1alpha1.DetachPolicySpec{
			Volumes: detachv1alpha1.VolumeSelector{Drivers: []string{held}},
			Timeout: "6s",
		}})
		e.eventually("detached once the new timeout ran out", 15*time.Second, e.vaGone(va))
		if after := time.Since(lost); after < 6*time.Second {
			t.Errorf("detached %s after the node left Ready, before the policy's 6 s", after)
		}
		t.Logf("detached %s after the node left Ready (policy timeout 6s)", time.Since(lost).Round(100*time.Millisecond))
	})

	t.Run("an invalid policy is reported and ignored", func(t *testing.T) {
		e := e.withT(t)
		name := e.ns + "-zero"
		e.applyPolicy(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: detachv1alpha1.DetachPolicySpec{
			Volumes: detachv1alpha1.VolumeSelector{Drivers: []string{other}},
			Timeout: "0s",
		}})
		if msg := e.policyValid(name, metav1.ConditionFalse); !strings.Contains(msg, "positive duration") {
			t.Errorf("Valid=False message %q does not say what is wrong", msg)
		}
		e.oneWarningEvent(metav1.NamespaceDefault, name, adc.ReasonInvalidDetachPolicy, 300*time.Millisecond)
		if rule := ctrl.Controller.DetachRules().For(migration.DetachVolume{Driver: other}); rule.Policy != migration.BuiltInRule {
			t.Errorf("the invalid policy's volumes get rule %s, want the built-in rule", rule.Policy)
		}
	})

	t.Run("the schema rejects what it can", func(t *testing.T) {
		e := e.withT(t)
		for name, spec := range map[string]detachv1alpha1.DetachPolicySpec{
			"selects nothing":          {Timeout: "1m"},
			"fencing without marks":    {Default: true, Evidence: []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceFencing}},
			"unknown evidence":         {Default: true, Evidence: []detachv1alpha1.EvidenceKind{"Vibes"}},
			"timeout not a duration":   {Default: true, Timeout: "soon"},
			"plugin not kubernetes.io": {Volumes: detachv1alpha1.VolumeSelector{InTreePlugins: []string{"aws-ebs"}}},
		} {
			u, err := detachv1alpha1.ToUnstructured(&detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-bad"}, Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.cp.Dynamic.Resource(detachv1alpha1.GroupVersionResource).Create(e.ctx, u, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("%s: create = %v, want Invalid", name, err)
			}
		}
	})
}
