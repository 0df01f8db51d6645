package attachstate

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// gceDisk1 is the unique volume name of GCE PD disk-1 after translation.
var gceDisk1 = migration.CSIUniqueName("pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/z/disks/disk-1")

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
	vol := InTreeVolume{UniqueName: "kubernetes.io/gce-pd/disk-1", Plugin: "kubernetes.io/gce-pd", Name: gceDisk1}
	key := Volume{Name: gceDisk1, InTreeName: vol.UniqueName}
	if other := m.Reserve("n1", key); other != "" {
		t.Fatalf("free volume held by %q", other)
	}
	if other := m.Reserve("n2", key); other != "n1" {
		t.Fatalf("while n1 attaches, n2 found the volume held by %q, want n1", other)
	}
	m.InTreeAttached("n1", vol, "/dev/sdb")
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if other := m.Reserve("n2", key); other != "n1" {
		t.Fatalf("after the attach, n2 found the volume held by %q, want n1 (its attachment)", other)
	}
	wake := m.ForgetInTree("n1", vol.UniqueName)
	if len(wake) != 1 || wake[0] != "n2" {
		t.Errorf("the detach woke %v, want n2 (it waited)", wake)
	}
	if other := m.Reserve("n2", key); other != "" {
		t.Errorf("after the detach the volume is still held by %q", other)
	}
}

// An in-tree attachment learned from node status (after a restart) knows only its in-tree
// name: a node waiting for the volume under its unique name still finds it, and its detach
// wakes that node.
func TestInTreeAttachmentLearnedFromStatusHoldsTheVolume(t *testing.T) {
	m, _ := newTestMemory("n1", "n2")
	const inTreeName = "kubernetes.io/gce-pd/disk-1"
	n1 := &v1.Node{Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{{Name: inTreeName}}}}
	n1.Name = "n1"
	m.NodeAttachments(n1)
	key := Volume{Name: gceDisk1, InTreeName: inTreeName}
	if other := m.Reserve("n2", key); other != "n1" {
		t.Fatalf("n2 found the volume held by %q, want n1 (its in-tree attachment)", other)
	}
	if wake := m.ForgetInTree("n1", inTreeName); len(wake) != 1 || wake[0] != "n2" {
		t.Errorf("the detach woke %v, want n2", wake)
	}
	if err := m.Check(); err != nil {
		t.Error(err)
	}
}

// A node that loses the managed annotation keeps, in memory, the in-tree attachments its
// status still lists: another node's ReadWriteOnce check must still find them.
func TestUnmanagedNodeKeepsItsListedInTreeAttachments(t *testing.T) {
	m, _ := newTestMemory("n1", "n2")
	const inTreeName = "kubernetes.io/gce-pd/disk-1"
	n1 := &v1.Node{Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{{Name: inTreeName}, {Name: "kubernetes.io/gce-pd/gone"}}}}
	n1.Name = "n1"
	m.NodeAttachments(n1)
	n1.Status.VolumesAttached = n1.Status.VolumesAttached[:1]
	m.Unmanaged(n1)
	if other := m.Reserve("n2", Volume{Name: gceDisk1, InTreeName: inTreeName}); other != "n1" {
		t.Errorf("after n1 lost the annotation, n2 found the volume held by %q, want n1", other)
	}
	if got := m.InTreeOf("n1"); len(got) != 1 {
		t.Errorf("kept %d in-tree attachments, want 1 (the one status still lists)", len(got))
	}
	if err := m.Check(); err != nil {
		t.Error(err)
	}
}
