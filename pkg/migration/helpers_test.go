package migration

import (
	"crypto/sha256"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// Test fixtures. Plugin and driver names are spelled out as literals on purpose, so the tests
// check the engine against the contract rather than against the library's own constants.
const (
	testNode = "node-1"

	gcePlugin       = "kubernetes.io/gce-pd"
	awsPlugin       = "kubernetes.io/aws-ebs"
	azureDiskPlugin = "kubernetes.io/azure-disk"
	azureFilePlugin = "kubernetes.io/azure-file"
	cinderPlugin    = "kubernetes.io/cinder"
	vspherePlugin   = "kubernetes.io/vsphere-volume"
	portworxPlugin  = "kubernetes.io/portworx-volume"

	gceDriver       = "pd.csi.storage.gke.io"
	awsDriver       = "ebs.csi.aws.com"
	azureDiskDriver = "disk.csi.azure.com"
	azureFileDriver = "file.csi.azure.com"
	cinderDriver    = "cinder.csi.openstack.org"
	vsphereDriver   = "csi.vsphere.vmware.com"
	portworxDriver  = "pxd.portworx.com"

	zoneLabel     = "topology.kubernetes.io/zone"
	betaZoneLabel = "failure-domain.beta.kubernetes.io/zone"
)

var (
	rwo = v1.ReadWriteOnce
	rwx = v1.ReadWriteMany
	rox = v1.ReadOnlyMany
)

// expectedVAName computes a VolumeAttachment name from the rule in upstream-facts, with
// code independent of the engine's.
func expectedVAName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

func pvWith(name string, src v1.PersistentVolumeSource, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{rwo}
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			AccessModes:            modes,
			ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: "claim-" + name},
		},
	}
}

func csiPV(name, driver, handle string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}, modes...)
}

func gcePV(name, pdName, zone string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	pv := pvWith(name, v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pdName, FSType: "ext4"}}, modes...)
	if zone != "" {
		pv.Labels = map[string]string{zoneLabel: zone}
	}
	return pv
}

func awsPV(name, volumeID string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID}}, modes...)
}

func azureDiskPV(name, uri string, kind *v1.AzureDataDiskKind) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "disk", DataDiskURI: uri, Kind: kind}})
}

func azureFilePV(name, share string, secretNamespace *string) *v1.PersistentVolume {
	pv := pvWith(name, v1.PersistentVolumeSource{AzureFile: &v1.AzureFilePersistentVolumeSource{
		SecretName: "azure-storage-account-acct-secret", ShareName: share, SecretNamespace: secretNamespace,
	}}, rwx)
	return pv
}

func cinderPV(name, id string) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{Cinder: &v1.CinderPersistentVolumeSource{VolumeID: id}})
}

func vspherePV(name, path string) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: path}})
}

func portworxPV(name, id string) *v1.PersistentVolume {
	return pvWith(name, v1.PersistentVolumeSource{PortworxVolume: &v1.PortworxVolumeSource{VolumeID: id}})
}

func inline(name string, src v1.VolumeSource) *v1.Volume {
	return &v1.Volume{Name: name, VolumeSource: src}
}

// registeredDrivers are the CSI drivers csiNodeWith lists as registered: every driver of the
// translation table and the native drivers the tests use.
var registeredDrivers = []string{gceDriver, awsDriver, azureDiskDriver, azureFileDriver, cinderDriver, vsphereDriver, portworxDriver,
	"hostpath.csi.k8s.io", "nfs.csi.k8s.io", "table.csi.example.com", "d.example.com"}

// csiNodeWith returns the node's CSINode with every driver of registeredDrivers registered;
// with no arguments it has no annotation at all.
func csiNodeWith(annotation ...string) *storagev1.CSINode {
	var a *string
	if len(annotation) > 0 {
		a = &annotation[0]
	}
	return csiNodeListing(a, registeredDrivers...)
}

// csiNodeListing returns the node's CSINode with the migrated-plugins annotation (none when
// nil) and drivers registered in spec.drivers.
func csiNodeListing(annotation *string, drivers ...string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	if annotation != nil {
		n.Annotations = map[string]string{MigratedPluginsAnnotation: *annotation}
	}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: "id-" + testNode})
	}
	return n
}

func nodeInfo(entries ...csinodeinfo.CSIDriverInfoStatus) *csinodeinfo.CSINodeInfo {
	return &csinodeinfo.CSINodeInfo{
		ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status:     csinodeinfo.CSINodeInfoStatus{Drivers: entries},
	}
}

func driverStatus(name string, available bool, mech csinodeinfo.VolumePluginMechanism) csinodeinfo.CSIDriverInfoStatus {
	return csinodeinfo.CSIDriverInfoStatus{Name: name, Available: available, VolumePluginMechanism: mech}
}

// driverMap is a DriverLookup over a map of storage.k8s.io/v1 CSIDrivers; it has no seed
// objects.
type driverMap map[string]*storagev1.CSIDriver

func (m driverMap) CSIDriver(name string) *storagev1.CSIDriver { return m[name] }

func (m driverMap) SeedCSIDriver(string) *seedcsidriver.CSIDriver { return nil }

// withDriver returns a lookup holding one CSIDriver with the given attachRequired.
func withDriver(name string, attachRequired *bool) driverMap {
	return driverMap{name: {ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: attachRequired}}}
}

func boolPtr(b bool) *bool { return &b }

func strPtr(s string) *string { return &s }

// cfgWith returns the default config with modes laid over it and the given node source.
func cfgWith(source NodeSource, modes ...string) *Config {
	c := DefaultConfig()
	m := map[string]Mode{}
	for i := 0; i+1 < len(modes); i += 2 {
		m[modes[i]] = Mode(modes[i+1])
	}
	c = c.WithModes(m)
	c.NodeSource = source
	return &c
}
