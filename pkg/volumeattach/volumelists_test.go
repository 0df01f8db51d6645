package volumeattach

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestVolumesListComparisons(t *testing.T) {
	a := []v1.AttachedVolume{{Name: "x"}, {Name: "y", DevicePath: "/dev/y"}}
	for _, tc := range []struct {
		name       string
		want, have []v1.AttachedVolume
		same, adds bool
	}{
		{"identical in another order", a, []v1.AttachedVolume{{Name: "y", DevicePath: "/dev/y"}, {Name: "x"}}, true, true},
		{"one more wanted", a, a[:1], false, true},
		{"one removed", a[:1], a, false, false},
		{"device path changed", a, []v1.AttachedVolume{{Name: "x"}, {Name: "y"}}, false, true},
		{"both empty", nil, nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameVolumes(tc.want, tc.have); got != tc.same {
				t.Errorf("SameVolumes = %v, want %v", got, tc.same)
			}
			if got := OnlyAdds(tc.want, tc.have); got != tc.adds {
				t.Errorf("OnlyAdds = %v, want %v", got, tc.adds)
			}
		})
	}
}
