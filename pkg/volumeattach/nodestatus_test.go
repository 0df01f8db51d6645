package volumeattach

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestVolumesAttachedPatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []v1.AttachedVolume
		want string
	}{
		{"empty list removes the field", nil, `{"status":{"volumesAttached":null}}`},
		{"csi volume without device path", []v1.AttachedVolume{{Name: "kubernetes.io/csi/d^h"}}, `{"status":{"volumesAttached":[{"name":"kubernetes.io/csi/d^h","devicePath":""}]}}`},
		{"in-tree with device path", []v1.AttachedVolume{{Name: "kubernetes.io/gce-pd/a", DevicePath: "/dev/sdb"}}, `{"status":{"volumesAttached":[{"name":"kubernetes.io/gce-pd/a","devicePath":"/dev/sdb"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := VolumesAttachedPatch(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch = %s, want %s", got, tc.want)
			}
		})
	}
}
