package cached

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cachedClaim is what adc's own claim informer keeps of a PersistentVolumeClaim: what
// migration.PodVolumes reads (identity and owners, the volume it is bound to, its phase).
// A v1.PersistentVolumeClaim is 480 bytes however empty; TrimInformerObjects trims a claim to
// exactly these fields, so object() rebuilds the trimmed claim.
type cachedClaim struct {
	compactMeta
	volumeName string
	phase      v1.PersistentVolumeClaimPhase
}

// cachedPV is what adc's own PersistentVolume informer keeps of a trimmed volume: the whole
// spec, but its source as the one source it has instead of the 22 pointers of
// v1.PersistentVolumeSource (176 bytes, all but one nil).
type cachedPV struct {
	compactMeta
	// source is the spec's PersistentVolumeSource as packSource keeps it: the CSI or
	// migratable in-tree source (*v1.CSIPersistentVolumeSource, ...) or the whole
	// *v1.PersistentVolumeSource.
	source                    any
	capacity                  v1.ResourceList
	accessModes               []v1.PersistentVolumeAccessMode
	claimRef                  *v1.ObjectReference
	reclaimPolicy             v1.PersistentVolumeReclaimPolicy
	storageClassName          string
	mountOptions              []string
	volumeMode                *v1.PersistentVolumeMode
	nodeAffinity              *v1.VolumeNodeAffinity
	volumeAttributesClassName *string
}

var (
	_ runtime.Object                        = &cachedClaim{}
	_ runtime.Object                        = &cachedPV{}
	_ compactForm[v1.PersistentVolumeClaim] = &cachedClaim{}
	_ compactForm[v1.PersistentVolume]      = &cachedPV{}
)

// GetObjectKind implements runtime.Object; a cachedClaim carries no type metadata.
func (c *cachedClaim) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (c *cachedClaim) DeepCopyObject() runtime.Object {
	out := *c
	out.compactMeta = c.compactMeta.deepCopy()
	return &out
}

// GetObjectKind implements runtime.Object; a cachedPV carries no type metadata.
func (p *cachedPV) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (p *cachedPV) DeepCopyObject() runtime.Object {
	return compactPV(p.object().DeepCopy())
}

// compactClaim turns a claim trimmed by TrimInformerObjects into its cached form.
func compactClaim(c *v1.PersistentVolumeClaim) *cachedClaim {
	return &cachedClaim{compactMeta: compactMetaOf(&c.ObjectMeta), volumeName: c.Spec.VolumeName, phase: c.Status.Phase}
}

// object rebuilds the trimmed claim; the result is the caller's (it shares the metadata's maps
// and slices, which nothing in adc changes).
func (c *cachedClaim) object() *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: c.objectMeta(),
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: c.volumeName}, Status: v1.PersistentVolumeClaimStatus{Phase: c.phase}}
}

// compactPV turns a volume trimmed by TrimInformerObjects into its cached form.
func compactPV(pv *v1.PersistentVolume) *cachedPV {
	s := &pv.Spec
	return &cachedPV{compactMeta: compactMetaOf(&pv.ObjectMeta), source: packSource(&s.PersistentVolumeSource),
		capacity: s.Capacity, accessModes: s.AccessModes, claimRef: s.ClaimRef, reclaimPolicy: s.PersistentVolumeReclaimPolicy,
		storageClassName: s.StorageClassName, mountOptions: s.MountOptions, volumeMode: s.VolumeMode,
		nodeAffinity: s.NodeAffinity, volumeAttributesClassName: s.VolumeAttributesClassName}
}

// object rebuilds the trimmed volume. The result is the caller's to read: it shares the source and
// the rest of the spec with the cache, as a lister's object does.
func (p *cachedPV) object() *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: p.objectMeta(), Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: unpackSource(p.source),
		Capacity:               p.capacity, AccessModes: p.accessModes, ClaimRef: p.claimRef,
		PersistentVolumeReclaimPolicy: p.reclaimPolicy, StorageClassName: p.storageClassName,
		MountOptions: p.mountOptions, VolumeMode: p.volumeMode, NodeAffinity: p.nodeAffinity,
		VolumeAttributesClassName: p.volumeAttributesClassName}}
}

// packSource gives the one source a volume's PersistentVolumeSource usually has, when it is
// CSI or a migratable in-tree plugin's; any other source is kept whole. No reflection here: it
// would touch the type data of every source type, which a process pays for in resident pages
// of its binary.
func packSource(s *v1.PersistentVolumeSource) any {
	switch {
	case s.CSI != nil && *s == (v1.PersistentVolumeSource{CSI: s.CSI}):
		return s.CSI
	case s.AWSElasticBlockStore != nil && *s == (v1.PersistentVolumeSource{AWSElasticBlockStore: s.AWSElasticBlockStore}):
		return s.AWSElasticBlockStore
	case s.GCEPersistentDisk != nil && *s == (v1.PersistentVolumeSource{GCEPersistentDisk: s.GCEPersistentDisk}):
		return s.GCEPersistentDisk
	case s.AzureDisk != nil && *s == (v1.PersistentVolumeSource{AzureDisk: s.AzureDisk}):
		return s.AzureDisk
	case s.AzureFile != nil && *s == (v1.PersistentVolumeSource{AzureFile: s.AzureFile}):
		return s.AzureFile
	case s.Cinder != nil && *s == (v1.PersistentVolumeSource{Cinder: s.Cinder}):
		return s.Cinder
	case s.VsphereVolume != nil && *s == (v1.PersistentVolumeSource{VsphereVolume: s.VsphereVolume}):
		return s.VsphereVolume
	case s.PortworxVolume != nil && *s == (v1.PersistentVolumeSource{PortworxVolume: s.PortworxVolume}):
		return s.PortworxVolume
	}
	whole := *s
	return &whole
}

func unpackSource(src any) v1.PersistentVolumeSource {
	switch s := src.(type) {
	case *v1.CSIPersistentVolumeSource:
		return v1.PersistentVolumeSource{CSI: s}
	case *v1.AWSElasticBlockStoreVolumeSource:
		return v1.PersistentVolumeSource{AWSElasticBlockStore: s}
	case *v1.GCEPersistentDiskVolumeSource:
		return v1.PersistentVolumeSource{GCEPersistentDisk: s}
	case *v1.AzureDiskVolumeSource:
		return v1.PersistentVolumeSource{AzureDisk: s}
	case *v1.AzureFilePersistentVolumeSource:
		return v1.PersistentVolumeSource{AzureFile: s}
	case *v1.CinderPersistentVolumeSource:
		return v1.PersistentVolumeSource{Cinder: s}
	case *v1.VsphereVirtualDiskVolumeSource:
		return v1.PersistentVolumeSource{VsphereVolume: s}
	case *v1.PortworxVolumeSource:
		return v1.PersistentVolumeSource{PortworxVolume: s}
	case *v1.PersistentVolumeSource:
		return *s
	}
	return v1.PersistentVolumeSource{}
}

func ClaimOf(obj interface{}) (*v1.PersistentVolumeClaim, bool) {
	return objectOf[v1.PersistentVolumeClaim](obj)
}

func PVOf(obj interface{}) (*v1.PersistentVolume, bool) { return objectOf[v1.PersistentVolume](obj) }
