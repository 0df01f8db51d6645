package preflight

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/migration"
)

// Fixture names. Literals on purpose: the tests check the package against the contract.
const (
	gcePlugin = "kubernetes.io/gce-pd"
	gceDriver = "pd.csi.storage.gke.io"
	ebsPlugin = "kubernetes.io/aws-ebs"
	ebsDriver = "ebs.csi.aws.com"
	vsPlugin  = "kubernetes.io/vsphere-volume"
	zone      = "us-central1-a"
)

// cluster builds a Cluster from objects of any of the kinds a preflight reads.
type cluster struct{ Cluster }

func newCluster() *cluster { return &cluster{} }

// node adds a managed node with a kubelet version.
func (c *cluster) node(name, kubelet string, labels ...string) *cluster {
	n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{migration.ManagedAnnotation: "true"}, Labels: map[string]string{}}}
	n.Status.NodeInfo.KubeletVersion = kubelet
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	c.Objects.Nodes = append(c.Objects.Nodes, n)
	return c
}

// listing adds a unique name to the last node's status.volumesAttached.
func (c *cluster) listing(node, unique string) *cluster {
	for i := range c.Objects.Nodes {
		if c.Objects.Nodes[i].Name == node {
			c.Objects.Nodes[i].Status.VolumesAttached = append(c.Objects.Nodes[i].Status.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(unique)})
		}
	}
	return c
}

// csiNode adds the node's CSINode: annotation ("-" for none) and registered drivers.
func (c *cluster) csiNode(name, migrated string, drivers ...storagev1.CSINodeDriver) *cluster {
	n := storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
	if migrated != "-" {
		n.Annotations = map[string]string{migration.MigratedPluginsAnnotation: migrated}
	}
	c.Objects.CSINodes = append(c.Objects.CSINodes, n)
	return c
}

// registered is a CSINode driver entry, with an attach limit when limit > 0.
func registered(driver string, limit int32) storagev1.CSINodeDriver {
	d := storagev1.CSINodeDriver{Name: driver, NodeID: "id"}
	if limit > 0 {
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &limit}
	}
	return d
}

func (c *cluster) csiDriver(name string, modes ...storagev1.VolumeLifecycleMode) *cluster {
	attach := true
	c.Objects.CSIDrivers = append(c.Objects.CSIDrivers, storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &attach, VolumeLifecycleModes: modes}})
	return c
}

// gcePV adds a bound gce-pd PersistentVolume and its claim in namespace ns; zone "" means no
// zone label.
func (c *cluster) gcePV(ns, name, zoneLabel string) *cluster {
	pv := v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-" + name}}}}
	if zoneLabel != "" {
		pv.Labels[v1.LabelTopologyZone] = zoneLabel
	}
	return c.bind(ns, pv)
}

// csiPV adds a bound native CSI PersistentVolume.
func (c *cluster) csiPV(ns, name, driver string) *cluster {
	return c.bind(ns, v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name}}}})
}

func (c *cluster) bind(ns string, pv v1.PersistentVolume) *cluster {
	uid := types.UID("uid-" + pv.Name)
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: "claim-" + pv.Name, UID: uid}
	c.Objects.PVs = append(c.Objects.PVs, pv)
	c.Objects.PVCs = append(c.Objects.PVCs, v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claim-" + pv.Name, UID: uid},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv.Name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
	return c
}

// pod adds a running pod on node using the claims of the named PersistentVolumes.
func (c *cluster) pod(ns, name, node string, pvs ...string) *cluster {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	for _, pv := range pvs {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "vol-" + pv, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + pv}}})
	}
	c.Pods = append(c.Pods, p)
	return c
}

// inlinePod adds a running pod on node with one inline volume.
func (c *cluster) inlinePod(ns, name, node string, src v1.VolumeSource) *cluster {
	c.Pods = append(c.Pods, v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node,
		Volumes: []v1.Volume{{Name: "inline", VolumeSource: src}}}, Status: v1.PodStatus{Phase: v1.PodRunning}})
	return c
}

// va adds a VolumeAttachment.
func (c *cluster) va(handle, driver, node, pv string) *cluster {
	c.VolumeAttachments = append(c.VolumeAttachments, storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(handle, driver, node)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true}})
	return c
}

func (c *cluster) storageClass(name, provisioner string, params map[string]string, topologies ...v1.TopologySelectorTerm) *cluster {
	c.StorageClasses = append(c.StorageClasses, storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner,
		Parameters: params, AllowedTopologies: topologies})
	return c
}

func gceHandle(zone, pd string) string { return "projects/UNSPECIFIED/zones/" + zone + "/disks/" + pd }

// config is the default configuration with modes laid over it.
func config(modes ...string) migration.Config {
	m := map[string]migration.Mode{}
	for i := 0; i+1 < len(modes); i += 2 {
		m[modes[i]] = migration.Mode(modes[i+1])
	}
	return migration.DefaultConfig().WithModes(m)
}
