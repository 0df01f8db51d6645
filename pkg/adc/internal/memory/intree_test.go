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
