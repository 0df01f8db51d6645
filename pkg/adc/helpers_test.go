package adc

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/adc/internal/attachstate"
	"github.com/migration-aware/adc/pkg/migration"
)

// The built-in rule (no DetachPolicy) is today's behaviour, unchanged.
func TestForceDetachBuiltInRule(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := &Controller{opts: Options{MaxWaitForUnmount: 6 * time.Minute}}
	rule := c.DetachRules().For(migration.DetachVolume{Driver: "d"})
	ready := func(status v1.ConditionStatus, ago time.Duration) v1.NodeCondition {
		return v1.NodeCondition{Type: v1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	for _, tc := range []struct {
		name      string
		node      v1.Node
		wantForce bool
		wantWait  time.Duration
	}{
		{"ready node", v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{ready(v1.ConditionTrue, time.Hour)}}}, false, 0},
		{"out-of-service taint", v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: OutOfServiceTaint, Effect: v1.TaintEffectNoExecute}}},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{ready(v1.ConditionTrue, time.Hour)}}}, true, 0},
		{"not ready for 7m", v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{ready(v1.ConditionFalse, 7*time.Minute)}}}, true, 0},
		{"unknown for 2m waits 4m more", v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{ready(v1.ConditionUnknown, 2*time.Minute)}}}, false, 4 * time.Minute},
		{"no conditions", v1.Node{}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := rule.Verdict(&tc.node, now)
			force, why, wait := v.Force, v.Reason, v.Wait(now)
			if force != tc.wantForce || wait != tc.wantWait {
				t.Errorf("forceDetach = %v (%q), wait %s; want %v, wait %s", force, why, wait, tc.wantForce, tc.wantWait)
			}
			if force && why == "" {
				t.Error("a forced detach must say why")
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults are valid", func(*Options) {}, ""},
		{"negative max wait", func(o *Options) { o.MaxWaitForUnmount = -time.Second }, "max-wait-for-unmount"},
		{"multiplier below one", func(o *Options) { o.Backoff.Multiplier = 0.5 }, "multiplier"},
		{"cap below start", func(o *Options) { o.Backoff.MaxInterval = time.Millisecond }, "cap"},
		{"jitter of one", func(o *Options) { o.Backoff.RandomizationFactor = 1 }, "jitter"},
		{"bad node source", func(o *Options) { o.Migration.NodeSource = "gossip" }, "migration config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mutate(&o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestHoldBacksOffOnlyWhenRetryIsDue(t *testing.T) {
	c := &Controller{}
	c.opts = Options{}.withDefaults()
	c.opts.Backoff.RandomizationFactor = 0
	c.mem = attachstate.New(attachstate.Options{Clock: c.opts.Clock, NewBackOff: c.newBackoff})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := pairKey{Node: "n", Pod: "ns/p", Volume: "v"}
	r, next := c.mem.Hold(key, "waiting", now)
	if r != 0 || next.Sub(now) != 500*time.Millisecond {
		t.Fatalf("first hold: retries %d, next in %s; want 0 and 500ms", r, next.Sub(now))
	}
	// An event re-decides the node before the retry is due: the backoff does not advance.
	if r, n2 := c.mem.Hold(key, "waiting", now.Add(100*time.Millisecond)); r != 0 || !n2.Equal(next) {
		t.Fatalf("early re-decide: retries %d, next %s; want 0 and %s", r, n2, next)
	}
	at := next
	var delays []time.Duration
	for i := 0; i < 10; i++ {
		_, n := c.mem.Hold(key, "waiting", at)
		delays = append(delays, n.Sub(at))
		at = n
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays = %v, want %v", delays, want)
		}
	}
}

// sendQueuedCreates sends, one at a time and in order, every create the node reconciles
// queued, as the create workers would: a test's "sync node" step is the reconcile and its
// creates.
func (c *Controller) sendQueuedCreates(ctx context.Context) {
	for c.creates.Len() > 0 {
		c.creates.ProcessNext(ctx)
	}
}

// listed reports whether node's status.volumesAttached lists the volume unique: the tests'
// own reading of node status, apart from the controller's.
func listed(node *v1.Node, unique string) bool {
	for _, av := range node.Status.VolumesAttached {
		if string(av.Name) == unique {
			return true
		}
	}
	return false
}
