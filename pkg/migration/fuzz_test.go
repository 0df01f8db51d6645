package migration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// FuzzParseMigratedPlugins checks the annotation parser never panics and keeps its promises
// on arbitrary input: known names are migratable and unique, unknown names are trimmed,
// non-empty, comma-free and unique, and the allocation-free scanner agrees with it.
func FuzzParseMigratedPlugins(f *testing.F) {
	for _, seed := range []string{
		"", ",", " , ,, ", allMigrated, "kubernetes.io/gce-pd", " kubernetes.io/gce-pd , kubernetes.io/gce-pd ",
		"kubernetes.io/rbd,example.com/x,example.com/x", "Kubernetes.io/GCE-PD", "\tkubernetes.io/aws-ebs\n",
		"kubernetes.io/gce-pd;kubernetes.io/aws-ebs", "\xff\xfe,kubernetes.io/cinder", strings.Repeat("a,", 40),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		plugins, unknown := ParseMigratedPlugins(value)
		seen := map[string]bool{}
		for _, p := range plugins {
			if !IsMigratablePlugin(p) {
				t.Fatalf("plugins contains non-migratable %q", p)
			}
			if seen[p] {
				t.Fatalf("plugins contains %q twice", p)
			}
			seen[p] = true
		}
		for _, u := range unknown {
			if u == "" || u != strings.TrimSpace(u) || strings.Contains(u, ",") || IsMigratablePlugin(u) {
				t.Fatalf("bad unknown item %q", u)
			}
			if seen[u] {
				t.Fatalf("unknown contains %q twice", u)
			}
			seen[u] = true
		}
		checkAnnotationListsAgrees(t, value)
	})
}

// fuzzDrivers is a DriverLookup answering for every driver with the same attachRequired.
type fuzzDrivers struct{ attach *bool }

func (f fuzzDrivers) CSIDriver(name string) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: f.attach}}
}

func (f fuzzDrivers) SeedCSIDriver(name string) *seedcsidriver.CSIDriver {
	return &seedcsidriver.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: seedcsidriver.CSIDriverSpec{AttachRequired: f.attach}}
}

// fuzzInput builds a Decide input from fuzzed values. kind picks the volume source, flags
// toggle optional parts (objects present, labels, read-only, ...), and the strings fill
// handles, zones, annotations and names.
func fuzzInput(kind, flags, modes, access uint8, handle, zone, annotation, extra string) (*Config, *Input) {
	inlineVol := flags&1 != 0
	ro := flags&2 != 0
	lun := int32(len(extra))
	var src v1.PersistentVolumeSource
	var vsrc v1.VolumeSource
	switch kind % 20 {
	case 0:
		src.CSI = &v1.CSIPersistentVolumeSource{Driver: extra, VolumeHandle: handle}
		vsrc.CSI = &v1.CSIVolumeSource{Driver: extra}
	case 1:
		src.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: handle, ReadOnly: ro, Partition: lun}
		vsrc.GCEPersistentDisk = src.GCEPersistentDisk
	case 2:
		src.AWSElasticBlockStore = &v1.AWSElasticBlockStoreVolumeSource{VolumeID: handle, ReadOnly: ro}
		vsrc.AWSElasticBlockStore = src.AWSElasticBlockStore
	case 3:
		k := v1.AzureDataDiskKind(extra)
		src.AzureDisk = &v1.AzureDiskVolumeSource{DataDiskURI: handle, DiskName: zone}
		if flags&4 != 0 {
			src.AzureDisk.Kind = &k
		}
		if flags&8 != 0 {
			src.AzureDisk.ReadOnly = &ro
			cm := v1.AzureDataDiskCachingMode(zone)
			src.AzureDisk.CachingMode = &cm
			src.AzureDisk.FSType = &extra
		}
		vsrc.AzureDisk = src.AzureDisk
	case 4:
		src.AzureFile = &v1.AzureFilePersistentVolumeSource{SecretName: extra, ShareName: handle, ReadOnly: ro}
		if flags&4 != 0 {
			src.AzureFile.SecretNamespace = &zone
		}
		vsrc.AzureFile = &v1.AzureFileVolumeSource{SecretName: extra, ShareName: handle, ReadOnly: ro}
	case 5:
		src.Cinder = &v1.CinderPersistentVolumeSource{VolumeID: handle, ReadOnly: ro}
		vsrc.Cinder = &v1.CinderVolumeSource{VolumeID: handle, ReadOnly: ro}
	case 6:
		src.VsphereVolume = &v1.VsphereVirtualDiskVolumeSource{VolumePath: handle, StoragePolicyName: extra}
		vsrc.VsphereVolume = src.VsphereVolume
	case 7:
		src.PortworxVolume = &v1.PortworxVolumeSource{VolumeID: handle, ReadOnly: ro}
		vsrc.PortworxVolume = src.PortworxVolume
	case 8:
		src.ISCSI = &v1.ISCSIPersistentVolumeSource{TargetPortal: zone, IQN: handle, Lun: lun, ReadOnly: ro}
		vsrc.ISCSI = &v1.ISCSIVolumeSource{TargetPortal: zone, IQN: handle, Lun: lun, ReadOnly: ro}
	case 9:
		src.FC = &v1.FCVolumeSource{TargetWWNs: strings.Split(handle, ","), WWIDs: strings.Split(zone, ","), ReadOnly: ro}
		if flags&4 != 0 {
			src.FC.Lun = &lun
		}
		if flags&8 != 0 {
			src.FC.TargetWWNs = nil
		}
		vsrc.FC = src.FC
	case 10:
		src.NFS = &v1.NFSVolumeSource{Server: zone, Path: handle}
		vsrc.NFS = src.NFS
	case 11:
		src.HostPath = &v1.HostPathVolumeSource{Path: handle}
		vsrc.HostPath = src.HostPath
	case 12:
		src.Local = &v1.LocalVolumeSource{Path: handle}
		vsrc.ConfigMap = &v1.ConfigMapVolumeSource{}
	case 13:
		src.RBD = &v1.RBDPersistentVolumeSource{RBDImage: handle}
		vsrc.Secret = &v1.SecretVolumeSource{SecretName: handle}
	case 14:
		src.FlexVolume = &v1.FlexPersistentVolumeSource{Driver: extra}
		vsrc.FlexVolume = &v1.FlexVolumeSource{Driver: extra, ReadOnly: ro}
	case 15:
		src.CephFS = &v1.CephFSPersistentVolumeSource{Path: handle}
		vsrc.Projected = &v1.ProjectedVolumeSource{}
	case 16:
		// Two sources at once: invalid, but must not panic.
		src.CSI = &v1.CSIPersistentVolumeSource{Driver: extra, VolumeHandle: handle}
		src.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: handle}
		vsrc.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: handle}
	case 17:
		vsrc.Ephemeral = &v1.EphemeralVolumeSource{}
	case 18:
		vsrc.EmptyDir = &v1.EmptyDirVolumeSource{}
	default:
		// no source at all
	}

	var accessModes []v1.PersistentVolumeAccessMode
	for i, m := range []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod} {
		if access&(1<<i) != 0 {
			accessModes = append(accessModes, m)
		}
	}
	in := &Input{PodNamespace: extra, NodeName: annotation}
	if flags&16 != 0 {
		in.NodeName = testNode
	}
	if inlineVol {
		in.InlineVolume = &v1.Volume{Name: zone, VolumeSource: vsrc}
	} else {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: extra}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src, AccessModes: accessModes}}
		labelKey := zoneLabel
		if access&16 != 0 {
			labelKey = betaZoneLabel
		}
		if access&32 != 0 {
			pv.Labels = map[string]string{labelKey: zone}
		}
		if access&64 != 0 {
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
				{MatchExpressions: []v1.NodeSelectorRequirement{{Key: labelKey, Operator: v1.NodeSelectorOpIn, Values: strings.Split(zone, "__")}}},
			}}}
		}
		if access&128 != 0 {
			pv.Annotations = map[string]string{
				"kubernetes.io/azure-file-resource-group": extra,
				"openstorage.io/auth-secret-name":         handle,
				"openstorage.io/auth-secret-namespace":    zone,
			}
			pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: zone, Name: handle}
		}
		in.PV = pv
		if flags&32 != 0 && kind%3 == 0 {
			in.InlineVolume = &v1.Volume{Name: "both", VolumeSource: vsrc}
		}
	}
	if flags&64 != 0 {
		in.CSINode = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: in.NodeName, Annotations: map[string]string{MigratedPluginsAnnotation: annotation}}}
	}
	if flags&128 != 0 {
		mech := csinodeinfo.VolumePluginMechanism(zone)
		if modes&64 != 0 {
			mech = csinodeinfo.VolumePluginMechanismCSI
		}
		info := &csinodeinfo.CSINodeInfo{ObjectMeta: metav1.ObjectMeta{Name: in.NodeName}}
		for _, d := range []string{extra, "pd.csi.storage.gke.io", "ebs.csi.aws.com", "disk.csi.azure.com", "file.csi.azure.com", "cinder.csi.openstack.org", "csi.vsphere.vmware.com", "pxd.portworx.com"} {
			info.Status.Drivers = append(info.Status.Drivers, csinodeinfo.CSIDriverInfoStatus{Name: d, Available: modes&128 != 0, VolumePluginMechanism: mech})
		}
		in.CSINodeInfo = info
	}
	switch (modes >> 4) % 4 {
	case 1:
		in.CSIDrivers = fuzzDrivers{attach: &ro}
	case 2:
		in.CSIDrivers = fuzzDrivers{}
	case 3:
		in.CSIDrivers = driverMap{}
	}

	cfg := DefaultConfig()
	allModes := []Mode{ModeOff, ModeOn, ModeComplete, Mode(zone)}
	for i, p := range MigratablePlugins {
		cfg.Modes[p] = allModes[(int(modes)+i)%len(allModes)%3]
	}
	if modes&8 != 0 {
		cfg.Modes[MigratablePlugins[int(modes)%len(MigratablePlugins)]] = allModes[3]
	}
	cfg.NodeSource = []NodeSource{NodeSourceCSINode, NodeSourceCSINodeInfo, NodeSourceAuto, ""}[int(modes)%4]
	// kind%20 picks the volume source, so the rest of kind is free for the driver-info source.
	cfg.DriverSource = []DriverSource{DriverSourceCSIDriver, DriverSourceSeed, DriverSourceAuto, "", "bogus"}[int(kind)/20%5]
	return &cfg, in
}

// FuzzDecide builds arbitrary PVs and inline volumes and checks Decide never panics, never
// modifies its input, is deterministic, and keeps the contract between its fields.
func FuzzDecide(f *testing.F) {
	type seed struct {
		kind, flags, modes, access      uint8
		handle, zone, annotation, extra string
	}
	for _, s := range []seed{
		{0, 16, 0, 1, "vol-1", "", "", "ebs.csi.aws.com"},
		{0, 16, 16, 4, "h", "", "", "nfs.csi.k8s.io"},
		{1, 16 | 64, 1, 1 | 32, "pd-1", "us-central1-a", allMigrated, "pv-1"},
		{1, 16, 2, 4 | 32, "pd-1", "us-central1-a__us-central1-b", "", "pv-1"},
		{1, 16, 2, 1 | 32, "pd-1", "us-central1-a__", "", "pv-1"},
		{1, 16 | 64, 0, 1 | 32 | 64, "pd-1", "__", " , kubernetes.io/gce-pd,,", "pv-1"},
		{1, 1 | 2 | 16, 2, 0, "pd-inline", "data", "", "ns"},
		{2, 16, 2, 1, "aws://us-east-1a/vol-0abc", "", "", "pv-ebs"},
		{2, 16, 2, 1, "aws://us-east-1a/bogus", "", "", "pv-ebs"},
		{2, 1 | 16 | 64, 1, 0, "aws://%zz/vol-1", "v", "kubernetes.io/aws-ebs", "ns"},
		{3, 4 | 16, 2, 1, "/subscriptions/s/disks/d", "", "", "Shared"},
		{3, 4 | 8 | 16, 2, 1, "/subscriptions/s/disks/d", "ReadOnly", "", "Managed"},
		{4, 4 | 16, 2, 4, "share", "default", "", "azure-storage-account-acct-secret"},
		{4, 16, 2, 4 | 128, "share", "ns", "", "azure-storage-account-acct-secret"},
		{5, 16 | 128, 2 | 64 | 128, 1, "c-1", "csi", "", "pv-c"},
		{6, 1 | 16, 2, 0, "[ds] a.vmdk", "vs", "", "gold"},
		{6, 16, 2, 1 | 32 | 64, "[ds] a.vmdk", "zone-a", "", "pv-vs"},
		{7, 16 | 128, 3, 1 | 128, "px-1", "ns", "", "pv-px"},
		{8, 16, 0, 1, "iqn.x", "10.0.0.1:3260", "", "pv-iscsi"},
		{9, 4 | 16, 0, 2, "500a,500b", "", "", "pv-fc"},
		{9, 8 | 16, 0, 2, "", "wwid1,wwid2", "", "pv-fc"},
		{14, 1 | 16, 0, 0, "", "flex", "", "example.com/lvm"},
		{16, 16 | 32, 0, 1, "h", "", "", "d"},
		{17, 1 | 16, 0, 0, "", "eph", "", "ns"},
		{19, 16, 0, 0, "", "", "", "pv-empty"},
		{1, 0, 8, 1, "pd", "z", "", "pv"},
		{20, 16, 16, 1, "h", "", "", "seed.csi.example.com"},
		{40, 16, 32, 1, "h", "", "", "auto.csi.example.com"},
		{81, 16, 2, 1 | 32, "pd-1", "us-central1-a", "", "pv-1"},
	} {
		f.Add(s.kind, s.flags, s.modes, s.access, s.handle, s.zone, s.annotation, s.extra)
	}
	f.Fuzz(func(t *testing.T, kind, flags, modes, access uint8, handle, zone, annotation, extra string) {
		cfg, in := fuzzInput(kind, flags, modes, access, handle, zone, annotation, extra)
		before := snapshot(in)
		d := Decide(cfg, in)
		if after := snapshot(in); after != before {
			t.Fatalf("Decide modified its input")
		}
		again := Decide(cfg, in)
		if again.Mechanism != d.Mechanism || again.Reason != d.Reason || again.VolumeAttachmentName != d.VolumeAttachmentName {
			t.Fatalf("Decide is not deterministic: %+v vs %+v", d, again)
		}
		checkInvariants(t, d, in)
	})
}

// checkInvariants asserts the relations between Decision fields that hold for every input.
func checkInvariants(t *testing.T, d Decision, in *Input) {
	t.Helper()
	valid := false
	for _, m := range Mechanisms {
		valid = valid || d.Mechanism == m
	}
	if !valid {
		t.Fatalf("unknown mechanism %q", d.Mechanism)
	}
	if d.Reason == "" {
		t.Fatalf("empty reason for %s", d.Mechanism)
	}
	hasSource := d.Source.PersistentVolumeName != nil || d.Source.InlineVolumeSpec != nil
	switch d.Mechanism {
	case MechanismCSI:
		if d.Driver == "" || d.VolumeHandle == "" {
			t.Fatalf("csi decision without driver or handle: %+v", d)
		}
		if d.VolumeAttachmentName != expectedVAName(d.VolumeHandle, d.Driver, in.NodeName) {
			t.Fatalf("VolumeAttachmentName %q does not match the rule", d.VolumeAttachmentName)
		}
		if d.UniqueName != "kubernetes.io/csi/"+d.Driver+"^"+d.VolumeHandle || d.VolumeKey != d.Driver+"^"+d.VolumeHandle {
			t.Fatalf("csi names wrong: unique %q key %q", d.UniqueName, d.VolumeKey)
		}
		if (d.Source.PersistentVolumeName != nil) == (d.Source.InlineVolumeSpec != nil) {
			t.Fatalf("csi decision must have exactly one source: %+v", d.Source)
		}
		if d.Source.PersistentVolumeName != nil && (in.PV == nil || *d.Source.PersistentVolumeName != in.PV.Name) {
			t.Fatalf("source PV name %q is not the input PV", *d.Source.PersistentVolumeName)
		}
	case MechanismCSINoAttach:
		if d.VolumeAttachmentName != "" || hasSource {
			t.Fatalf("csi-no-attach with a VolumeAttachment: %+v", d)
		}
		if d.UniqueName != "kubernetes.io/csi/"+d.Driver+"^"+d.VolumeHandle {
			t.Fatalf("csi-no-attach unique name %q", d.UniqueName)
		}
	case MechanismInTree:
		if d.VolumeAttachmentName != "" || hasSource || d.UniqueName == "" || d.VolumeKey == "" {
			t.Fatalf("in-tree decision fields wrong: %+v", d)
		}
		if !strings.HasPrefix(d.UniqueName, d.Plugin+"/") {
			t.Fatalf("in-tree unique name %q does not start with plugin %q", d.UniqueName, d.Plugin)
		}
	default:
		if d.VolumeAttachmentName != "" || hasSource || d.UniqueName != "" {
			t.Fatalf("%s decision must not name an attachment: %+v", d.Mechanism, d)
		}
	}
	if d.Mechanism == MechanismCSI || d.Mechanism == MechanismCSINoAttach || d.Mechanism == MechanismInTree {
		if d.MultiAttachAllowed && in.PV != nil && d.Mechanism != MechanismInTree {
			if !multiAttach(in.PV.Spec.AccessModes) && in.PV.Spec.CSI != nil {
				t.Fatalf("multi-attach allowed without RWX/ROX")
			}
		}
	}
}
