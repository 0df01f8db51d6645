package memory

import "testing"

func TestPluginOfUniqueName(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"gce pd", "kubernetes.io/gce-pd/disk-1", "kubernetes.io/gce-pd"},
		{"vsphere path with slashes", "kubernetes.io/vsphere-volume/[ds] vols/a.vmdk", "kubernetes.io/vsphere-volume"},
		{"no slash", "weird", "weird"},
		{"one slash", "kubernetes.io/x", "kubernetes.io/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pluginOfUniqueName(tc.in); got != tc.want {
				t.Errorf("pluginOfUniqueName(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// A ReadWriteOnce in-tree volume is held for its node from the reservation through the
// attach's success: a second node never finds it free in between, and finds it free again
// only once the attachment is forgotten.
func TestInTreeAttachHoldsTheVolumeThroughSuccess(t *testing.T) {
	m, _ := newTestMemory("n1", "n2")
	vol := InTreeVolume{UniqueName: "kubernetes.io/gce-pd/disk-1", Plugin: "kubernetes.io/gce-pd"}
	const key = "pv:pv1"
	if other := m.Reserve("n1", key, vol.UniqueName); other != "" {
		t.Fatalf("free volume held by %q", other)
	}
	if other := m.Reserve("n2", key, vol.UniqueName); other != "n1" {
		t.Fatalf("while n1 attaches, n2 found the volume held by %q, want n1", other)
	}
	m.InTreeAttached("n1", key, vol, "/dev/sdb")
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if other := m.Reserve("n2", key, vol.UniqueName); other != "n1" {
		t.Fatalf("after the attach, n2 found the volume held by %q, want n1 (its attachment)", other)
	}
	wake := m.ForgetInTree("n1", vol.UniqueName)
	if len(wake) != 1 || wake[0] != "n2" {
		t.Errorf("the detach woke %v, want n2 (it waited)", wake)
	}
	if other := m.Reserve("n2", key, vol.UniqueName); other != "" {
		t.Errorf("after the detach the volume is still held by %q", other)
	}
}
