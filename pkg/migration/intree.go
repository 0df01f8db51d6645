package migration

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/csi-translation-lib/plugins"
)

// This file holds the facts about in-tree volume plugins that csi-translation-lib does not
// provide: which plugins had an attach phase, which volume id their GetVolumeName returned
// (the second half of the in-tree unique name), and the names of the plugins that never
// attach. Translation itself is always left to the library.

// Plugin names of in-tree volume types that are not in the translation table.
const (
	pluginISCSI       = "kubernetes.io/iscsi"
	pluginFC          = "kubernetes.io/fc"
	pluginNFS         = "kubernetes.io/nfs"
	pluginHostPath    = "kubernetes.io/host-path"
	pluginLocal       = "kubernetes.io/local-volume"
	pluginEmptyDir    = "kubernetes.io/empty-dir"
	pluginConfigMap   = "kubernetes.io/configmap"
	pluginSecret      = "kubernetes.io/secret"
	pluginProjected   = "kubernetes.io/projected"
	pluginDownwardAPI = "kubernetes.io/downward-api"
	pluginGitRepo     = "kubernetes.io/git-repo"
	pluginImage       = "kubernetes.io/image"
	pluginGlusterfs   = "kubernetes.io/glusterfs"
	pluginCephFS      = "kubernetes.io/cephfs"
	pluginRBD         = "kubernetes.io/rbd"
	pluginQuobyte     = "kubernetes.io/quobyte"
	pluginFlocker     = "kubernetes.io/flocker"
	pluginPhotonPD    = "kubernetes.io/photon-pd"
	pluginScaleIO     = "kubernetes.io/scaleio"
	pluginStorageOS   = "kubernetes.io/storageos"
)

// inTreeAttachable reports whether a migratable in-tree plugin had an attach phase. GCE PD,
// AWS EBS, Azure Disk, Cinder and vSphere implemented AttachableVolumePlugin; Azure File and
// Portworx never did (the kubelet mounted them directly), so with the in-tree mechanism their
// volumes are not-attachable.
func inTreeAttachable(plugin string) bool {
	switch plugin {
	case plugins.GCEPDInTreePluginName, plugins.AWSEBSInTreePluginName, plugins.AzureDiskInTreePluginName,
		plugins.CinderInTreePluginName, plugins.VSphereInTreePluginName:
		return true
	}
	return false
}

// migratableVolumeID returns the volume id the in-tree plugin's GetVolumeName returned for a
// PV or inline volume of a migratable plugin (gce-pd: pdName, aws-ebs: volumeID, azure-disk:
// diskURI, cinder: volumeID, vsphere: volumePath, portworx: volumeID; azure-file, never
// attachable, is identified by its shareName), and the field it came from for error messages.
func migratableVolumeID(pv *v1.PersistentVolume, vol *v1.Volume) (id, field string) {
	if pv != nil {
		s := &pv.Spec.PersistentVolumeSource
		switch {
		case s.GCEPersistentDisk != nil:
			return s.GCEPersistentDisk.PDName, "spec.gcePersistentDisk.pdName"
		case s.AWSElasticBlockStore != nil:
			return s.AWSElasticBlockStore.VolumeID, "spec.awsElasticBlockStore.volumeID"
		case s.AzureDisk != nil:
			return s.AzureDisk.DataDiskURI, "spec.azureDisk.diskURI"
		case s.AzureFile != nil:
			return s.AzureFile.ShareName, "spec.azureFile.shareName"
		case s.Cinder != nil:
			return s.Cinder.VolumeID, "spec.cinder.volumeID"
		case s.VsphereVolume != nil:
			return s.VsphereVolume.VolumePath, "spec.vsphereVolume.volumePath"
		case s.PortworxVolume != nil:
			return s.PortworxVolume.VolumeID, "spec.portworxVolume.volumeID"
		}
		return "", "spec"
	}
	if vol != nil {
		s := &vol.VolumeSource
		switch {
		case s.GCEPersistentDisk != nil:
			return s.GCEPersistentDisk.PDName, "gcePersistentDisk.pdName"
		case s.AWSElasticBlockStore != nil:
			return s.AWSElasticBlockStore.VolumeID, "awsElasticBlockStore.volumeID"
		case s.AzureDisk != nil:
			return s.AzureDisk.DataDiskURI, "azureDisk.diskURI"
		case s.AzureFile != nil:
			return s.AzureFile.ShareName, "azureFile.shareName"
		case s.Cinder != nil:
			return s.Cinder.VolumeID, "cinder.volumeID"
		case s.VsphereVolume != nil:
			return s.VsphereVolume.VolumePath, "vsphereVolume.volumePath"
		case s.PortworxVolume != nil:
			return s.PortworxVolume.VolumeID, "portworxVolume.volumeID"
		}
	}
	return "", "volume source"
}

// translationHint tells the operator what to fix when csi-translation-lib rejects a volume
// of plugin.
func translationHint(plugin string, inline bool) string {
	where := "on the PersistentVolume"
	if inline {
		where = "in the pod's volume"
	}
	switch plugin {
	case plugins.GCEPDInTreePluginName:
		if inline {
			return "fix the gcePersistentDisk source in the pod's volume"
		}
		return "fix the PersistentVolume's zone label (topology.kubernetes.io/zone or failure-domain.beta.kubernetes.io/zone): it must be one zone such as us-central1-a, or zones of one region joined by \"__\""
	case plugins.AWSEBSInTreePluginName:
		return "set awsElasticBlockStore.volumeID " + where + " to a bare EBS volume ID (vol-...) or aws://<zone>/vol-..."
	case plugins.AzureDiskInTreePluginName:
		return "only managed Azure disks (kind: Managed) can be migrated to CSI; move the data to a managed disk, or set the plugin to off and keep the node in-tree"
	case plugins.VSphereInTreePluginName:
		if inline {
			return "csi-translation-lib cannot translate an inline vsphereVolume with storagePolicyName; drop storagePolicyName from the pod's volume or use a PersistentVolume"
		}
	case plugins.AzureFileInTreePluginName:
		return "set azureFile.secretNamespace " + where + " or bind it to a claim (claimRef) so the secret namespace is known"
	}
	return "fix the volume source " + where
}

// otherPlugin classifies an in-tree volume type outside the translation table. attachable is
// true for iSCSI, Fibre Channel and FlexVolume, which still have an attach phase in 1.36.
// removed is true for plugins Kubernetes no longer ships at all (rbd, cephfs, glusterfs, ...):
// no kubelet can mount them and nothing can attach them.
type otherPlugin struct {
	name       string
	attachable bool
	removed    bool
}

// pvOtherPlugin classifies a PV source that csi-translation-lib cannot translate. ok is
// false when the PV has no source at all.
func pvOtherPlugin(s *v1.PersistentVolumeSource) (p otherPlugin, ok bool) {
	switch {
	case s.ISCSI != nil:
		return otherPlugin{name: pluginISCSI, attachable: true}, true
	case s.FC != nil:
		return otherPlugin{name: pluginFC, attachable: true}, true
	case s.FlexVolume != nil:
		return otherPlugin{name: s.FlexVolume.Driver, attachable: true}, true
	case s.NFS != nil:
		return otherPlugin{name: pluginNFS}, true
	case s.HostPath != nil:
		return otherPlugin{name: pluginHostPath}, true
	case s.Local != nil:
		return otherPlugin{name: pluginLocal}, true
	case s.RBD != nil:
		return otherPlugin{name: pluginRBD, removed: true}, true
	case s.CephFS != nil:
		return otherPlugin{name: pluginCephFS, removed: true}, true
	case s.Glusterfs != nil:
		return otherPlugin{name: pluginGlusterfs, removed: true}, true
	case s.Quobyte != nil:
		return otherPlugin{name: pluginQuobyte, removed: true}, true
	case s.Flocker != nil:
		return otherPlugin{name: pluginFlocker, removed: true}, true
	case s.StorageOS != nil:
		return otherPlugin{name: pluginStorageOS, removed: true}, true
	case s.ScaleIO != nil:
		return otherPlugin{name: pluginScaleIO, removed: true}, true
	case s.PhotonPersistentDisk != nil:
		return otherPlugin{name: pluginPhotonPD, removed: true}, true
	}
	return otherPlugin{}, false
}

// inlineOtherPlugin classifies an inline pod volume that csi-translation-lib cannot
// translate and that is neither a claim nor a CSI ephemeral volume.
func inlineOtherPlugin(s *v1.VolumeSource) (p otherPlugin, ok bool) {
	switch {
	case s.ConfigMap != nil:
		return otherPlugin{name: pluginConfigMap}, true
	case s.Secret != nil:
		return otherPlugin{name: pluginSecret}, true
	case s.EmptyDir != nil:
		return otherPlugin{name: pluginEmptyDir}, true
	case s.Projected != nil:
		return otherPlugin{name: pluginProjected}, true
	case s.DownwardAPI != nil:
		return otherPlugin{name: pluginDownwardAPI}, true
	case s.HostPath != nil:
		return otherPlugin{name: pluginHostPath}, true
	case s.GitRepo != nil:
		return otherPlugin{name: pluginGitRepo}, true
	case s.Image != nil:
		return otherPlugin{name: pluginImage}, true
	case s.NFS != nil:
		return otherPlugin{name: pluginNFS}, true
	case s.ISCSI != nil:
		return otherPlugin{name: pluginISCSI, attachable: true}, true
	case s.FC != nil:
		return otherPlugin{name: pluginFC, attachable: true}, true
	case s.FlexVolume != nil:
		return otherPlugin{name: s.FlexVolume.Driver, attachable: true}, true
	case s.RBD != nil:
		return otherPlugin{name: pluginRBD, removed: true}, true
	case s.CephFS != nil:
		return otherPlugin{name: pluginCephFS, removed: true}, true
	case s.Glusterfs != nil:
		return otherPlugin{name: pluginGlusterfs, removed: true}, true
	case s.Quobyte != nil:
		return otherPlugin{name: pluginQuobyte, removed: true}, true
	case s.Flocker != nil:
		return otherPlugin{name: pluginFlocker, removed: true}, true
	case s.StorageOS != nil:
		return otherPlugin{name: pluginStorageOS, removed: true}, true
	case s.ScaleIO != nil:
		return otherPlugin{name: pluginScaleIO, removed: true}, true
	case s.PhotonPersistentDisk != nil:
		return otherPlugin{name: pluginPhotonPD, removed: true}, true
	}
	return otherPlugin{}, false
}

// iscsiVolumeID returns what the in-tree iSCSI plugin's GetVolumeName returns:
// <targetPortal>:<iqn>:<lun>.
func iscsiVolumeID(targetPortal, iqn string, lun int32) (string, error) {
	if targetPortal == "" || iqn == "" {
		return "", fmt.Errorf("iscsi source needs both targetPortal and iqn")
	}
	return fmt.Sprintf("%v:%v:%v", targetPortal, iqn, lun), nil
}

// fcVolumeID returns what the in-tree Fibre Channel plugin's GetVolumeName returns:
// "[wwn ...]:<lun>" for target WWNs with a LUN, else "[wwid ...]".
func fcVolumeID(targetWWNs []string, lun *int32, wwids []string) (string, error) {
	if len(targetWWNs) != 0 && lun != nil {
		return fmt.Sprintf("%v:%v", targetWWNs, *lun), nil
	}
	if len(wwids) != 0 {
		return fmt.Sprintf("%v", wwids), nil
	}
	return "", fmt.Errorf("fc source needs targetWWNs with a lun, or wwids")
}
