package explain

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// scopeRecorder is a plan.Reader over fixed objects that records what it was asked.
type scopeRecorder struct {
	pods  []v1.Pod
	pvs   []v1.PersistentVolume
	asked []string
}

func (s *scopeRecorder) Pods(_ context.Context, ns string, scheduledOnly bool) ([]v1.Pod, error) {
	s.asked = append(s.asked, "pods "+ns)
	var out []v1.Pod
	for _, p := range s.pods {
		if p.Namespace == ns && (!scheduledOnly || p.Spec.NodeName != "") {
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *scopeRecorder) PersistentVolumeClaims(_ context.Context, ns string) ([]v1.PersistentVolumeClaim, error) {
	s.asked = append(s.asked, "claims "+ns)
	return []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + ns}}}, nil
}

func (s *scopeRecorder) PersistentVolumes(_ context.Context, names []string) ([]v1.PersistentVolume, error) {
	s.asked = append(s.asked, "pvs "+strings.Join(names, ","))
	var out []v1.PersistentVolume
	for _, pv := range s.pvs {
		for _, n := range names {
			if pv.Name == n {
				out = append(out, pv)
			}
		}
	}
	return out, nil
}

func (s *scopeRecorder) ClusterObjects(context.Context, migration.Config, bool) (plan.ClusterObjects, error) {
	s.asked = append(s.asked, "cluster")
	return plan.ClusterObjects{}, nil
}

// TestReadIsScoped: an explanation reads its namespace's pods (pending ones too) and claims,
// only the volumes they and the target name, and never another namespace.
func TestReadIsScoped(t *testing.T) {
	objs := func() *scopeRecorder {
		return &scopeRecorder{
			pods: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "pg-0"}}, {ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "w"}}},
			pvs: []v1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-db"}}, {ObjectMeta: metav1.ObjectMeta{Name: "pv-web"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "db", Name: "c"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "loose"}}},
		}
	}
	cfg := migration.DefaultConfig()
	for _, tc := range []struct {
		target   Target
		asked    string
		pods     int
		notFound bool
	}{
		{Target{Kind: KindPod, Namespace: "db", Name: "pg-0"}, "pods db;claims db;pvs pv-db;cluster", 1, false},
		{Target{Kind: KindPod, Namespace: "db", Name: "gone"}, "pods db;claims db;pvs pv-db;cluster", 1, true},
		{Target{Kind: KindPV, Name: "bound"}, "pvs bound;pods db;claims db;pvs bound,pv-db;cluster", 1, false},
		{Target{Kind: KindPV, Name: "loose"}, "pvs loose;pvs loose;cluster", 0, false},
		{Target{Kind: KindPV, Name: "nope"}, "pvs nope", 0, true},
	} {
		r := objs()
		cl, err := Read(context.Background(), r, cfg, tc.target)
		if got := strings.Join(r.asked, ";"); got != tc.asked {
			t.Errorf("%s: asked %q, want %q", tc.target, got, tc.asked)
		}
		if errors.Is(err, ErrNotFound) != tc.notFound || (!tc.notFound && err != nil) {
			t.Errorf("%s: err %v, want not found: %v", tc.target, err, tc.notFound)
		}
		if !tc.notFound && len(cl.Pods) != tc.pods {
			t.Errorf("%s: %d pods, want %d", tc.target, len(cl.Pods), tc.pods)
		}
	}
}
