package migration

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
)

func policy(name string, mutate func(*detachv1alpha1.DetachPolicySpec)) *detachv1alpha1.DetachPolicy {
	p := &detachv1alpha1.DetachPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	mutate(&p.Spec)
	return p
}

var downSince = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// lostNode is a node not Ready since downSince with the given taints and extra conditions.
func lostNode(taints []string, conds ...v1.NodeCondition) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule})
	}
	n.Status.Conditions = append([]v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, LastTransitionTime: metav1.NewTime(downSince)}}, conds...)
	return n
}

func readyNode(taints []string) *v1.Node {
	n := lostNode(taints)
	n.Status.Conditions[0].Status = v1.ConditionTrue
	return n
}

// The decision table of README's "Node loss: detach policy", row by row.
func TestDetachVerdict(t *testing.T) {
	builtIn := CompileDetachPolicies(nil, 6*time.Minute).For(DetachVolume{Driver: "d"})
	set := CompileDetachPolicies([]*detachv1alpha1.DetachPolicy{
		policy("cloud", func(s *detachv1alpha1.DetachPolicySpec) {
			s.Volumes.StorageClassNames = []string{"fast"}
			s.Evidence = []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceCloudShutdown, detachv1alpha1.EvidenceOutOfService}
			s.Timeout = "2m"
		}),
		policy("fenced-never", func(s *detachv1alpha1.DetachPolicySpec) {
			s.Volumes.Drivers = []string{"safe.csi"}
			s.Evidence = []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceFencing, detachv1alpha1.EvidenceGracefulShutdown}
			s.Fencing = &detachv1alpha1.Fencing{Taints: []string{"fence.example.com/fenced"}, Conditions: []detachv1alpha1.FencingCondition{{Type: "Fenced"}}}
			s.Timeout = detachv1alpha1.TimeoutNever
		}),
	}, 6*time.Minute)
	cloud := set.For(DetachVolume{StorageClass: "fast", Driver: "d"})
	never := set.For(DetachVolume{Driver: "safe.csi"})
	if cloud.Policy != "cloud" || never.Policy != "fenced-never" {
		t.Fatalf("For: got %s and %s", cloud.Policy, never.Policy)
	}
	graceful := lostNode(nil)
	graceful.Status.Conditions[0].Status = v1.ConditionFalse
	graceful.Status.Conditions[0].Message = "container runtime status check may not have completed yet, node is shutting down"

	for _, tc := range []struct {
		name     string
		rule     *DetachRule
		node     *v1.Node
		now      time.Time
		force    bool
		evidence Evidence
		held     bool
		release  bool
		at       time.Time
		reason   string
	}{
		{name: "built-in: Ready node keeps an in-use volume", rule: builtIn, node: readyNode(nil), now: downSince.Add(time.Hour), reason: "is Ready"},
		{name: "built-in: out-of-service even on a Ready node (upstream's rule)", rule: builtIn, node: readyNode([]string{v1.TaintNodeOutOfService}), force: true, evidence: EvidenceOutOfService},
		{name: "built-in: not Ready, before max-wait-for-unmount", rule: builtIn, node: lostNode(nil), now: downSince.Add(time.Minute), at: downSince.Add(6 * time.Minute), reason: "max-wait-for-unmount"},
		{name: "built-in: not Ready, after max-wait-for-unmount", rule: builtIn, node: lostNode(nil), now: downSince.Add(6 * time.Minute), force: true, evidence: EvidenceTimeout, at: downSince.Add(6 * time.Minute)},
		{name: "built-in: cloud shutdown is not its evidence", rule: builtIn, node: lostNode([]string{CloudShutdownTaint}), now: downSince.Add(time.Second), at: downSince.Add(6 * time.Minute)},
		{name: "policy: cloud shutdown on a not-Ready node frees the pods too", rule: cloud, node: lostNode([]string{CloudShutdownTaint}), now: downSince.Add(time.Second), force: true, evidence: EvidenceCloudShutdown, release: true},
		{name: "policy: cloud shutdown taint on a Ready node is nothing", rule: cloud, node: readyNode([]string{CloudShutdownTaint}), now: downSince.Add(time.Hour), reason: "is Ready"},
		{name: "policy: out-of-service on a Ready node is nothing", rule: cloud, node: readyNode([]string{v1.TaintNodeOutOfService}), now: downSince.Add(time.Hour), reason: "is Ready"},
		{name: "policy: its own timeout", rule: cloud, node: lostNode(nil), now: downSince.Add(2 * time.Minute), force: true, evidence: EvidenceTimeout, at: downSince.Add(2 * time.Minute)},
		{name: "policy: before its own timeout", rule: cloud, node: lostNode(nil), now: downSince.Add(time.Minute), at: downSince.Add(2 * time.Minute), reason: "timeout of policy cloud"},
		{name: "policy: fencing taint", rule: never, node: lostNode([]string{"fence.example.com/fenced"}), now: downSince, force: true, evidence: EvidenceFenced, release: true},
		{name: "policy: fencing condition", rule: never, node: lostNode(nil, v1.NodeCondition{Type: "Fenced", Status: v1.ConditionTrue}), now: downSince, force: true, evidence: EvidenceFenced, release: true},
		{name: "policy: fencing condition with another status", rule: never, node: lostNode(nil, v1.NodeCondition{Type: "Fenced", Status: v1.ConditionFalse}), now: downSince.Add(time.Hour), held: true},
		{name: "policy: Never holds however long", rule: never, node: lostNode(nil), now: downSince.Add(1000 * time.Hour), held: true, reason: "holds it"},
		{name: "policy: graceful shutdown is no proof while the volume is in use", rule: never, node: graceful, now: downSince.Add(time.Hour), held: true, reason: "no proof"},
		{name: "policy: unrelated evidence", rule: never, node: lostNode([]string{CloudShutdownTaint, v1.TaintNodeOutOfService}), now: downSince.Add(time.Hour), held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.rule.Verdict(tc.node, tc.now)
			if v.Force != tc.force || v.Evidence != tc.evidence || v.Held != tc.held || v.ReleasesPods != tc.release || !v.At.Equal(tc.at) {
				t.Errorf("got %+v", v)
			}
			if !strings.Contains(v.Reason, tc.reason) || v.Reason == "" {
				t.Errorf("reason %q, want it to contain %q", v.Reason, tc.reason)
			}
		})
	}
}

func TestCompileDetachPolicies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []*detachv1alpha1.DetachPolicy
		want     map[string]string // policy -> reason
		vol      DetachVolume
		rule     string
	}{
		{name: "no policy: built-in everywhere", vol: DetachVolume{Driver: "d"}, rule: BuiltInRule},
		{
			name: "class beats driver beats plugin beats default",
			policies: []*detachv1alpha1.DetachPolicy{
				policy("a-default", func(s *detachv1alpha1.DetachPolicySpec) { s.Default = true }),
				policy("b-plugin", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.InTreePlugins = []string{"kubernetes.io/aws-ebs"} }),
				policy("c-driver", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.Drivers = []string{"ebs.csi.aws.com"} }),
				policy("d-class", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.StorageClassNames = []string{"gp3"} }),
			},
			want: map[string]string{"a-default": PolicyReasonValid, "b-plugin": PolicyReasonValid, "c-driver": PolicyReasonValid, "d-class": PolicyReasonValid},
			vol:  DetachVolume{StorageClass: "gp3", Driver: "ebs.csi.aws.com", Plugin: "kubernetes.io/aws-ebs"}, rule: "d-class",
		},
		{
			name: "a migrated in-tree volume matches by its plugin",
			policies: []*detachv1alpha1.DetachPolicy{
				policy("a-default", func(s *detachv1alpha1.DetachPolicySpec) { s.Default = true }),
				policy("b-plugin", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.InTreePlugins = []string{"kubernetes.io/aws-ebs"} }),
			},
			vol: DetachVolume{StorageClass: "other", Driver: "ebs.csi.aws.com", Plugin: "kubernetes.io/aws-ebs"}, rule: "b-plugin",
		},
		{
			name: "two defaults: the second is a conflict",
			policies: []*detachv1alpha1.DetachPolicy{
				policy("b", func(s *detachv1alpha1.DetachPolicySpec) { s.Default = true; s.Timeout = "1m" }),
				policy("a", func(s *detachv1alpha1.DetachPolicySpec) { s.Default = true }),
			},
			want: map[string]string{"a": PolicyReasonValid, "b": PolicyReasonConflict},
			vol:  DetachVolume{Driver: "x"}, rule: "a",
		},
		{
			name: "the same class twice: the second is a conflict",
			policies: []*detachv1alpha1.DetachPolicy{
				policy("one", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.StorageClassNames = []string{"gp3"} }),
				policy("two", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.StorageClassNames = []string{"io2", "gp3"} }),
			},
			want: map[string]string{"one": PolicyReasonValid, "two": PolicyReasonConflict},
			vol:  DetachVolume{StorageClass: "io2"}, rule: BuiltInRule,
		},
		{
			name: "invalid policies are ignored",
			policies: []*detachv1alpha1.DetachPolicy{
				policy("selects-nothing", func(s *detachv1alpha1.DetachPolicySpec) { s.Timeout = "1m" }),
				policy("fencing-without-marks", func(s *detachv1alpha1.DetachPolicySpec) {
					s.Default = true
					s.Evidence = []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceFencing}
				}),
				policy("bad-timeout", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.Drivers = []string{"d"}; s.Timeout = "soon" }),
				policy("zero-timeout", func(s *detachv1alpha1.DetachPolicySpec) { s.Volumes.Drivers = []string{"d"}; s.Timeout = "0s" }),
				policy("unknown-evidence", func(s *detachv1alpha1.DetachPolicySpec) {
					s.Volumes.Drivers = []string{"d"}
					s.Evidence = []detachv1alpha1.EvidenceKind{"Vibes"}
				}),
			},
			want: map[string]string{"selects-nothing": PolicyReasonInvalid, "fencing-without-marks": PolicyReasonInvalid, "bad-timeout": PolicyReasonInvalid,
				"zero-timeout": PolicyReasonInvalid, "unknown-evidence": PolicyReasonInvalid},
			vol: DetachVolume{Driver: "d"}, rule: BuiltInRule,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := CompileDetachPolicies(tc.policies, time.Minute)
			for name, reason := range tc.want {
				if v := set.Verdicts[name]; v.Reason != reason || v.Message == "" || v.Valid != (reason == PolicyReasonValid) {
					t.Errorf("policy %s: got %+v, want reason %s", name, v, reason)
				}
			}
			if got := set.For(tc.vol).Policy; got != tc.rule {
				t.Errorf("For(%+v) = %s, want %s", tc.vol, got, tc.rule)
			}
		})
	}
}

// No DetachPolicy, whatever it accepts, forces a detach from a Ready node: every combination
// of evidence, fencing marks, timeouts and node taints and conditions.
func TestNoPolicyForcesOnAReadyNode(t *testing.T) {
	kinds := []detachv1alpha1.EvidenceKind{detachv1alpha1.EvidenceOutOfService, detachv1alpha1.EvidenceCloudShutdown,
		detachv1alpha1.EvidenceFencing, detachv1alpha1.EvidenceGracefulShutdown}
	taints := []string{v1.TaintNodeOutOfService, CloudShutdownTaint, "fence.example.com/fenced", v1.TaintNodeUnreachable}
	for mask := 0; mask < 1<<len(kinds); mask++ {
		for _, timeout := range []string{"", "1s", detachv1alpha1.TimeoutNever} {
			spec := detachv1alpha1.DetachPolicySpec{Default: true, Timeout: timeout,
				Fencing: &detachv1alpha1.Fencing{Taints: []string{"fence.example.com/fenced"}, Conditions: []detachv1alpha1.FencingCondition{{Type: "Fenced"}}}}
			for i, k := range kinds {
				if mask&(1<<i) != 0 {
					spec.Evidence = append(spec.Evidence, k)
				}
			}
			rule := CompileDetachPolicies([]*detachv1alpha1.DetachPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}}, time.Second).For(DetachVolume{Driver: "d"})
			if rule.Policy != "p" {
				t.Fatalf("policy %+v not compiled: %+v", spec, rule)
			}
			for tm := 0; tm < 1<<len(taints); tm++ {
				var on []string
				for i, k := range taints {
					if tm&(1<<i) != 0 {
						on = append(on, k)
					}
				}
				node := readyNode(on)
				node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: "Fenced", Status: v1.ConditionTrue})
				if v := rule.Verdict(node, downSince.Add(1000*time.Hour)); v.Force || v.ReleasesPods {
					t.Errorf("evidence %v, timeout %q, taints %v on a Ready node: %+v", spec.Evidence, timeout, on, v)
				}
			}
		}
	}
}
