package preflight

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

// Names the cases use.
const (
	gcePlugin = "kubernetes.io/gce-pd"
	gceDriver = "pd.csi.storage.gke.io"
	vsPlugin  = "kubernetes.io/vsphere-volume"
	zone      = "us-central1-a"
	// gceZone is the node label the GCE PD CSI driver's topology puts on its nodes.
	gceZone = "topology.gke.io/zone"
	ns      = "preflight"
)

// seeder creates one case's objects; names are prefixed with the case's prefix, so a case
// never meets a previous case's pods (which stay: envtest runs no garbage collector).
type seeder struct {
	t      *testing.T
	ctx    context.Context
	c      kubernetes.Interface
	prefix string
}

func (s *seeder) name(n string) string { return s.prefix + "-" + n }

func (s *seeder) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// node registers a managed node with a kubelet version and labels.
func (s *seeder) node(n, kubelet string, labels ...string) *seeder {
	s.t.Helper()
	_, err := (simulator.Kubelet{Client: s.c}).RegisterNode(s.ctx, s.name(n), true)
	s.must(err)
	s.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := s.c.CoreV1().Nodes().Get(s.ctx, s.name(n), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(labels); i += 2 {
			node.Labels[labels[i]] = labels[i+1]
		}
		node, err = s.c.CoreV1().Nodes().Update(s.ctx, node, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		node.Status.NodeInfo.KubeletVersion = kubelet
		_, err = s.c.CoreV1().Nodes().UpdateStatus(s.ctx, node, metav1.UpdateOptions{})
		return err
	}))
	return s
}

// listing adds unique names to a node's status.volumesAttached.
func (s *seeder) listing(n string, unique ...string) *seeder {
	s.t.Helper()
	s.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := s.c.CoreV1().Nodes().Get(s.ctx, s.name(n), metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, u := range unique {
			node.Status.VolumesAttached = append(node.Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(u)})
		}
		_, err = s.c.CoreV1().Nodes().UpdateStatus(s.ctx, node, metav1.UpdateOptions{})
		return err
	}))
	return s
}

// csiNode writes a node's CSINode: the migrated-plugins annotation ("-" for none) and the
// registered drivers, name=limit ("name" alone: no limit).
func (s *seeder) csiNode(n, migrated string, drivers ...storagev1.CSINodeDriver) *seeder {
	s.t.Helper()
	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: s.name(n)}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
	if cn.Spec.Drivers == nil {
		cn.Spec.Drivers = []storagev1.CSINodeDriver{}
	}
	if migrated != "-" {
		cn.Annotations = map[string]string{migration.MigratedPluginsAnnotation: migrated}
	}
	_, err := s.c.StorageV1().CSINodes().Create(s.ctx, cn, metav1.CreateOptions{})
	s.must(err)
	return s
}

// registered is a CSINode driver entry, with an attach limit when limit > 0.
func registered(driver string, limit int32) storagev1.CSINodeDriver {
	d := storagev1.CSINodeDriver{Name: driver, NodeID: "id"}
	if limit > 0 {
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &limit}
	}
	return d
}

func (s *seeder) csiDriver(name string, modes ...storagev1.VolumeLifecycleMode) *seeder {
	s.t.Helper()
	attach := true
	_, err := s.c.StorageV1().CSIDrivers().Create(s.ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &attach, VolumeLifecycleModes: modes}}, metav1.CreateOptions{})
	s.must(err)
	return s
}

func (s *seeder) storageClass(name, provisioner string, params map[string]string, topologies ...v1.TopologySelectorTerm) *seeder {
	s.t.Helper()
	_, err := s.c.StorageV1().StorageClasses().Create(s.ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: s.name(name)},
		Provisioner: provisioner, Parameters: params, AllowedTopologies: topologies}, metav1.CreateOptions{})
	s.must(err)
	return s
}

// gcePV creates a gce-pd PersistentVolume bound to a claim of the same name; zone "" means
// no zone label.
func (s *seeder) gcePV(name, zoneLabel string) *seeder {
	s.t.Helper()
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: s.name(name), Labels: map[string]string{}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-" + s.name(name)}}}}
	if zoneLabel != "" {
		pv.Labels[v1.LabelTopologyZone] = zoneLabel
	}
	_, err := simulator.BindNewClaim(s.ctx, s.c, ns, s.name(name), pv)
	s.must(err)
	return s
}

// pod creates a pod on node using the claims of the named PersistentVolumes.
func (s *seeder) pod(name, node string, pvs ...string) *seeder {
	s.t.Helper()
	var vols []v1.Volume
	for _, pv := range pvs {
		vols = append(vols, v1.Volume{Name: pv, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: s.name(pv)}}})
	}
	return s.podWith(name, node, vols...)
}

func (s *seeder) podWith(name, node string, vols ...v1.Volume) *seeder {
	s.t.Helper()
	_, err := s.c.CoreV1().Pods(ns).Create(s.ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.name(name)},
		Spec: v1.PodSpec{NodeName: s.name(node), Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}, Volumes: vols}}, metav1.CreateOptions{})
	s.must(err)
	return s
}

// va creates an attached VolumeAttachment of a gce-pd PersistentVolume on node.
func (s *seeder) va(pv, node string) *seeder {
	s.t.Helper()
	name := s.name(pv)
	handle := "projects/UNSPECIFIED/zones/" + zone + "/disks/disk-" + name
	va, err := s.c.StorageV1().VolumeAttachments().Create(s.ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(handle, gceDriver, s.name(node))},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: gceDriver, NodeName: s.name(node), Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &name}}}, metav1.CreateOptions{})
	s.must(err)
	va.Status.Attached = true
	_, err = s.c.StorageV1().VolumeAttachments().UpdateStatus(s.ctx, va, metav1.UpdateOptions{})
	s.must(err)
	return s
}

// wipe deletes every cluster-scoped object a case creates, so the next case sees only its
// own (a preflight reads the whole cluster); the pods and claims of earlier cases stay, on
// nodes that no longer exist, where a preflight ignores them.
func wipe(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	c := framework.Get(t).Client
	all := metav1.ListOptions{}
	noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	errs := []error{
		c.StorageV1().VolumeAttachments().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		c.StorageV1().CSINodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		c.StorageV1().CSIDrivers().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		c.StorageV1().StorageClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		c.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("wiping the previous case: %v", err)
		}
	}
	framework.Eventually(ctx, t, "the previous case's objects gone", 30*time.Second, func(ctx context.Context) (bool, string) {
		pvs, err := c.CoreV1().PersistentVolumes().List(ctx, all)
		if err != nil {
			return false, err.Error()
		}
		for _, pv := range pvs.Items {
			// The PV protection finalizer waits for a controller envtest does not run.
			if _, err := c.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{}); err != nil {
				return false, err.Error()
			}
		}
		nodes, err := c.CoreV1().Nodes().List(ctx, all)
		if err != nil {
			return false, err.Error()
		}
		return len(pvs.Items) == 0 && len(nodes.Items) == 0, fmt.Sprintf("%d PersistentVolumes, %d nodes left", len(pvs.Items), len(nodes.Items))
	})
}
