package cached

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaimUsersFollowPodEvents(t *testing.T) {
	pod := func(name string, claims ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c,
				VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}
	scratch := pod("e")
	scratch.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	type event struct{ old, cur interface{} }
	cases := []struct {
		name   string
		events []event
		want   map[ClaimRef][]string
	}{
		{name: "a pod adds its claims",
			events: []event{{nil, pod("a", "c1", "c2")}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/a"}, {"ns", "c2"}: {"ns/a"}}},
		{name: "a generic ephemeral volume's claim is <pod>-<volume>",
			events: []event{{nil, scratch}},
			want:   map[ClaimRef][]string{{"ns", "e-scratch"}: {"ns/e"}}},
		{name: "two pods share a claim; deleting one keeps the other",
			events: []event{{nil, pod("a", "c1")}, {nil, pod("b", "c1")}, {pod("a", "c1"), nil}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/b"}}},
		{name: "three pods share a claim; deleting the first keeps the others",
			events: []event{{nil, pod("a", "c1")}, {nil, pod("b", "c1")}, {nil, pod("c", "c1")}, {pod("a", "c1"), nil}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/b", "ns/c"}}},
		{name: "deleting the last user forgets the claim",
			events: []event{{nil, pod("a", "c1")}, {pod("a", "c1"), nil}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: nil}},
		{name: "an update without volume changes changes nothing",
			events: []event{{nil, pod("a", "c1")}, {pod("a", "c1"), pod("a", "c1")}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/a"}}},
		{name: "a cached pod indexes as the pod it came from",
			events: []event{{nil, mustTransform(t, pod("a", "c1"))}, {mustTransform(t, pod("a", "c1")), pod("a", "c1")}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/a"}}},
		{name: "the same add twice is one user",
			events: []event{{nil, pod("a", "c1")}, {nil, pod("a", "c1")}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: {"ns/a"}}},
		{name: "objects that are not pods are ignored",
			events: []event{{nil, &v1.Node{}}, {nil, (*v1.Pod)(nil)}},
			want:   map[ClaimRef][]string{{"ns", "c1"}: nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := NewClaimUsers()
			for _, e := range tc.events {
				u.Update(e.old, e.cur)
			}
			for ref, want := range tc.want {
				if got := u.PodKeys(ref); !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
					t.Errorf("pods of %v: %v, want %v", ref, got, want)
				}
			}
			if len(tc.want) > 0 {
				u.pods.Range(func(ref ClaimRef, _ []string) bool {
					if _, ok := tc.want[ref]; !ok {
						t.Errorf("unexpected claim %v kept", ref)
					}
					return true
				})
			}
		})
	}
}

// mustTransform returns obj in the form adc's own informer caches keep it.
func mustTransform(t *testing.T, obj interface{}) interface{} {
	t.Helper()
	out, err := Transform(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
