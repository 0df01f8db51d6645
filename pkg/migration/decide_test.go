package migration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
)

// want is the expected decision. Every field is compared exactly, except reason and notes,
// which must contain each listed substring. The VolumeAttachment name is not listed: it is
// computed independently (expectedVAName) for every MechanismCSI case and must be empty
// otherwise.
type want struct {
	mech         Mechanism
	plugin       string
	inTree       string
	driver       string
	handle       string
	unique       string
	key          string
	sourcePV     string // expected Source.PersistentVolumeName; "" means nil
	inlineSource bool   // expect Source.InlineVolumeSpec to be set
	multi        bool
	cause        WaitCause
	reason       []string
	notes        []string
}

type decideCase struct {
	name string
	cfg  *Config
	in   Input
	want want
}

func gceHandle(zone, pd string) string { return "projects/UNSPECIFIED/zones/" + zone + "/disks/" + pd }

const (
	allMigrated = "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"
	azureURI    = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d1"
	vmdk        = "[datastore1] volumes/disk-1.vmdk"
)

func decideCases() []decideCase {
	on := cfgWith(NodeSourceCSINode)
	complete := func(plugin string) *Config { return cfgWith(NodeSourceCSINode, plugin, "complete") }
	off := func(plugin string) *Config { return cfgWith(NodeSourceCSINode, plugin, "off") }
	info := func(plugin string) *Config { return cfgWith(NodeSourceCSINodeInfo, plugin, "on") }
	auto := cfgWith(NodeSourceAuto)
	managed := v1.AzureManagedDisk
	shared := v1.AzureSharedBlobDisk
	ns := "team-a"

	gceKey := func(zone, pd string) string { return gceDriver + "^" + gceHandle(zone, pd) }
	gceCSI := func(zone, pd, pv string) want {
		return want{mech: MechanismCSI, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle(zone, pd),
			unique: "kubernetes.io/csi/" + gceKey(zone, pd), key: gceKey(zone, pd), sourcePV: pv}
	}
	gceInTree := func(zone, pd string) want {
		return want{mech: MechanismInTree, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle(zone, pd),
			unique: "kubernetes.io/gce-pd/" + pd, key: gceKey(zone, pd)}
	}
	gceWait := func(zone, pd string, reason ...string) want {
		return want{mech: MechanismWait, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle(zone, pd), key: gceKey(zone, pd), cause: WaitNodeMigrationState, reason: reason}
	}
	with := func(w want, f func(*want)) want { f(&w); return w }

	return []decideCase{
		// ---- native CSI ----
		{name: "native CSI PV without CSIDriver object attaches through VolumeAttachment", cfg: on,
			in:   Input{PV: csiPV("pv-csi", "ebs.csi.aws.com", "vol-0123"), NodeName: testNode, CSIDrivers: driverMap{}},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "ebs.csi.aws.com", handle: "vol-0123", unique: "kubernetes.io/csi/ebs.csi.aws.com^vol-0123", key: "ebs.csi.aws.com^vol-0123", sourcePV: "pv-csi", reason: []string{"native CSI", "no CSIDriver"}}},
		{name: "native CSI PV with nil driver lookup means attach required", cfg: on,
			in:   Input{PV: csiPV("pv-csi", "ebs.csi.aws.com", "vol-0123"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "ebs.csi.aws.com", handle: "vol-0123", unique: "kubernetes.io/csi/ebs.csi.aws.com^vol-0123", key: "ebs.csi.aws.com^vol-0123", sourcePV: "pv-csi"}},
		{name: "native CSI PV with attachRequired true", cfg: on,
			in:   Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSIDrivers: withDriver("hostpath.csi.k8s.io", boolPtr(true))},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", unique: "kubernetes.io/csi/hostpath.csi.k8s.io^h1", key: "hostpath.csi.k8s.io^h1", sourcePV: "pv-csi", reason: []string{"attachRequired=true"}}},
		{name: "native CSI PV with attachRequired unset in CSIDriver", cfg: on,
			in:   Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSIDrivers: withDriver("hostpath.csi.k8s.io", nil)},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", unique: "kubernetes.io/csi/hostpath.csi.k8s.io^h1", key: "hostpath.csi.k8s.io^h1", sourcePV: "pv-csi", reason: []string{"does not set attachRequired"}}},
		{name: "native CSI PV with attachRequired false needs no attach", cfg: on,
			in:   Input{PV: csiPV("pv-nfs", "nfs.csi.k8s.io", "server#share"), NodeName: testNode, CSIDrivers: withDriver("nfs.csi.k8s.io", boolPtr(false))},
			want: want{mech: MechanismCSINoAttach, plugin: CSIPluginName, driver: "nfs.csi.k8s.io", handle: "server#share", unique: "kubernetes.io/csi/nfs.csi.k8s.io^server#share", key: "nfs.csi.k8s.io^server#share", reason: []string{"attachRequired=false"}}},
		{name: "native CSI PV ReadWriteMany allows multi-attach", cfg: on,
			in:   Input{PV: csiPV("pv-rwx", "d.example.com", "h", rwx), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "d.example.com", handle: "h", unique: "kubernetes.io/csi/d.example.com^h", key: "d.example.com^h", sourcePV: "pv-rwx", multi: true}},
		{name: "native CSI PV ReadOnlyMany allows multi-attach", cfg: on,
			in:   Input{PV: csiPV("pv-rox", "d.example.com", "h", rox), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "d.example.com", handle: "h", unique: "kubernetes.io/csi/d.example.com^h", key: "d.example.com^h", sourcePV: "pv-rox", multi: true}},
		{name: "native CSI PV without volume handle is an error", cfg: on,
			in:   Input{PV: csiPV("pv-bad", "d.example.com", ""), NodeName: testNode},
			want: want{mech: MechanismError, plugin: CSIPluginName, driver: "d.example.com", reason: []string{`"pv-bad"`, "volumeHandle"}}},
		{name: "inline CSI ephemeral volume is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("scratch", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "inline.csi.example.com"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: CSIPluginName, driver: "inline.csi.example.com", reason: []string{"ephemeral inline"}}},

		// ---- GCE PD PV ----
		{name: "gce-pd PV complete zonal label goes CSI without consulting node", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) { w.reason = []string{"complete", "not consulted"} })},
		{name: "gce-pd PV complete regional label yields regional handle", cfg: complete(gcePlugin),
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a__us-central1-b"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: "projects/UNSPECIFIED/regions/us-central1/disks/pd-1",
				unique: "kubernetes.io/csi/pd.csi.storage.gke.io^projects/UNSPECIFIED/regions/us-central1/disks/pd-1", key: "pd.csi.storage.gke.io^projects/UNSPECIFIED/regions/us-central1/disks/pd-1", sourcePV: "pv-gce"}},
		{name: "gce-pd PV complete without zone label uses UNSPECIFIED zone", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", ""), NodeName: testNode},
			want: gceCSI("UNSPECIFIED", "pd-1", "pv-gce")},
		{name: "gce-pd PV beta zone label is honoured", cfg: complete(gcePlugin),
			in: Input{PV: func() *v1.PersistentVolume {
				pv := gcePV("pv-gce", "pd-1", "")
				pv.Labels = map[string]string{betaZoneLabel: "europe-west1-b"}
				return pv
			}(), NodeName: testNode},
			want: gceCSI("europe-west1-b", "pd-1", "pv-gce")},
		{name: "gce-pd PV RWX is translated to RWO so multi-attach is refused", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a", rwx), NodeName: testNode},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "gce-pd PV ROX stays ROX so multi-attach is allowed", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a", rox), NodeName: testNode},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) { w.multi = true })},
		{name: "gce-pd PV on and CSINode lists gce-pd goes CSI", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(allMigrated)},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) { w.reason = []string{"is migrated on node", "CSINode"} })},
		{name: "gce-pd PV on and CSINode lists other plugins stays in-tree with same key", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith("kubernetes.io/aws-ebs")},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.reason = []string{"not migrated"} })},
		{name: "gce-pd PV on and CSINode without annotation stays in-tree", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith()},
			want: gceInTree("us-central1-a", "pd-1")},
		{name: "gce-pd PV on and CSINode absent waits naming the CSINode", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: gceWait("us-central1-a", "pd-1", `CSINode "node-1" does not exist yet`, "retries")},
		{name: "gce-pd PV off and CSINode absent stays in-tree without waiting", cfg: off(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.reason = []string{"off"} })},
		{name: "gce-pd PV off and CSINode without gce-pd stays in-tree", cfg: off(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith("kubernetes.io/aws-ebs")},
			want: gceInTree("us-central1-a", "pd-1")},
		{name: "gce-pd PV off but node migrated is version skew", cfg: off(gcePlugin),
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(allMigrated)},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("us-central1-a", "pd-1"), key: gceKey("us-central1-a", "pd-1"),
				reason: []string{"version skew", "kubernetes.io/gce-pd=on", "roll the node back"}}},
		{name: "gce-pd PV in-tree keeps original RWX access mode", cfg: off(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a", rwx), NodeName: testNode},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.multi = true })},
		{name: "gce-pd PV zone label with empty segment is a translation error", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a__"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, reason: []string{"cannot translate", `"pv-gce"`, "zone label"}}},
		{name: "gce-pd PV zone label of only delimiters is a translation error even when off", cfg: off(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "__"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, reason: []string{"cannot translate", "zone label"}}},
		{name: "gce-pd PV zones from two regions is a translation error", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a__europe-west1-b"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, reason: []string{"cannot translate", "regions"}}},
		{name: "gce-pd PV with empty pdName is an error", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "", "us-central1-a"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, reason: []string{"spec.gcePersistentDisk.pdName"}}},
		{name: "gce-pd PV migrated with attachRequired false needs no attach", cfg: complete(gcePlugin),
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSIDrivers: withDriver(gceDriver, boolPtr(false))},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) {
				w.mech, w.sourcePV, w.reason = MechanismCSINoAttach, "", []string{"attachRequired=false"}
			})},
		{name: "gce-pd PV migrated with attachRequired true attaches", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSIDrivers: withDriver(gceDriver, boolPtr(true))},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},

		// ---- malformed CSINode annotations ----
		{name: "annotation with spaces empty items and duplicates still lists gce-pd", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(" , kubernetes.io/gce-pd ,,kubernetes.io/gce-pd, ")},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "annotation with unknown name is a note not an error", cfg: on,
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith("kubernetes.io/gce-pd,kubernetes.io/flocker,example.com/foo")},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) {
				w.notes = []string{`"kubernetes.io/flocker"`, `"example.com/foo"`, "ignored"}
			})},
		{name: "annotation with only unknown and case-mismatched names keeps in-tree", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith("Kubernetes.io/GCE-PD,gce-pd")},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.notes = []string{`"Kubernetes.io/GCE-PD"`, `"gce-pd"`} })},
		{name: "empty annotation value means nothing migrated", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith("")},
			want: gceInTree("us-central1-a", "pd-1")},

		// ---- CSINodeInfo source ----
		{name: "csinodeinfo source with available csi entry goes CSI", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismCSI))},
			want: with(gceCSI("us-central1-a", "pd-1", "pv-gce"), func(w *want) { w.reason = []string{"CSINodeInfo", "status.drivers"} })},
		{name: "csinodeinfo source with in-tree mechanism stays in-tree", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismInTree))},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.reason = []string{`volumePluginMechanism="in-tree"`} })},
		{name: "csinodeinfo source with unavailable csi driver stays in-tree", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, false, csinodeinfo.VolumePluginMechanismCSI))},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.reason = []string{"available=false"} })},
		{name: "csinodeinfo source without entry for the driver stays in-tree", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(awsDriver, true, csinodeinfo.VolumePluginMechanismCSI))},
			want: with(gceInTree("us-central1-a", "pd-1"), func(w *want) { w.reason = []string{"no entry"} })},
		{name: "csinodeinfo source with absent object waits naming the CSINodeInfo", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(allMigrated)},
			want: gceWait("us-central1-a", "pd-1", `CSINodeInfo "node-1" does not exist yet`)},
		{name: "csinodeinfo source off and node reports csi is version skew", cfg: cfgWith(NodeSourceCSINodeInfo, gcePlugin, "off"),
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismCSI))},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("us-central1-a", "pd-1"), key: gceKey("us-central1-a", "pd-1"),
				reason: []string{"version skew", "CSINodeInfo"}}},

		// ---- auto source ----
		{name: "auto source prefers CSINode over CSINodeInfo", cfg: auto,
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(gcePlugin),
				CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismInTree))},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "auto source falls back to CSINodeInfo when CSINode is absent", cfg: auto,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismCSI))},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "auto source with CSINodeInfo in-tree stays in-tree", cfg: auto,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismInTree))},
			want: gceInTree("us-central1-a", "pd-1")},
		{name: "auto source with neither object waits naming both", cfg: auto,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: gceWait("us-central1-a", "pd-1", `neither CSINode "node-1" nor CSINodeInfo "node-1" exists yet`)},

		// ---- AWS EBS ----
		{name: "aws-ebs PV complete with bare volume id", cfg: complete(awsPlugin),
			in: Input{PV: awsPV("pv-ebs", "vol-0abc"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0abc",
				unique: "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc", key: "ebs.csi.aws.com^vol-0abc", sourcePV: "pv-ebs"}},
		{name: "aws-ebs PV on not migrated keeps aws URL as in-tree volume id", cfg: on,
			in: Input{PV: awsPV("pv-ebs", "aws://us-east-1a/vol-0abc"), NodeName: testNode, CSINode: csiNodeWith(gcePlugin)},
			want: want{mech: MechanismInTree, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0abc",
				unique: "kubernetes.io/aws-ebs/aws://us-east-1a/vol-0abc", key: "ebs.csi.aws.com^vol-0abc"}},
		{name: "aws-ebs PV on migrated translates aws URL to bare handle", cfg: on,
			in: Input{PV: awsPV("pv-ebs", "aws://us-east-1a/vol-0abc"), NodeName: testNode, CSINode: csiNodeWith(allMigrated)},
			want: want{mech: MechanismCSI, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0abc",
				unique: "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc", key: "ebs.csi.aws.com^vol-0abc", sourcePV: "pv-ebs"}},
		{name: "aws-ebs PV with bad handle is a translation error", cfg: complete(awsPlugin),
			in:   Input{PV: awsPV("pv-ebs", "aws://us-east-1a/not-a-volume"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, reason: []string{"cannot translate", `"pv-ebs"`, "vol-"}}},

		// ---- Azure Disk ----
		{name: "azure-disk PV complete managed disk", cfg: complete(azureDiskPlugin),
			in: Input{PV: azureDiskPV("pv-ad", azureURI, &managed), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: azureDiskPlugin, inTree: azureDiskPlugin, driver: azureDiskDriver, handle: azureURI,
				unique: "kubernetes.io/csi/disk.csi.azure.com^" + azureURI, key: "disk.csi.azure.com^" + azureURI, sourcePV: "pv-ad"}},
		{name: "azure-disk PV off stays in-tree with diskURI as volume id", cfg: off(azureDiskPlugin),
			in: Input{PV: azureDiskPV("pv-ad", azureURI, nil), NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: azureDiskPlugin, inTree: azureDiskPlugin, driver: azureDiskDriver, handle: azureURI,
				unique: "kubernetes.io/azure-disk/" + azureURI, key: "disk.csi.azure.com^" + azureURI}},
		{name: "azure-disk PV unmanaged blob disk cannot be translated", cfg: complete(azureDiskPlugin),
			in:   Input{PV: azureDiskPV("pv-ad", azureURI, &shared), NodeName: testNode},
			want: want{mech: MechanismError, plugin: azureDiskPlugin, inTree: azureDiskPlugin, driver: azureDiskDriver, reason: []string{"managed"}}},

		// ---- Azure File ----
		{name: "azure-file PV complete translates with secret namespace", cfg: complete(azureFilePlugin),
			in: Input{PV: azureFilePV("pv-af", "share1", strPtr("default")), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: azureFilePlugin, inTree: azureFilePlugin, driver: azureFileDriver, handle: "#acct#share1#pv-af#default",
				unique: "kubernetes.io/csi/file.csi.azure.com^#acct#share1#pv-af#default", key: "file.csi.azure.com^#acct#share1#pv-af#default", sourcePV: "pv-af", multi: true}},
		{name: "azure-file PV complete with attachRequired false needs no attach", cfg: complete(azureFilePlugin),
			in: Input{PV: azureFilePV("pv-af", "share1", strPtr("default")), NodeName: testNode, CSIDrivers: withDriver(azureFileDriver, boolPtr(false))},
			want: want{mech: MechanismCSINoAttach, plugin: azureFilePlugin, inTree: azureFilePlugin, driver: azureFileDriver, handle: "#acct#share1#pv-af#default",
				unique: "kubernetes.io/csi/file.csi.azure.com^#acct#share1#pv-af#default", key: "file.csi.azure.com^#acct#share1#pv-af#default", multi: true}},
		{name: "azure-file PV on not migrated is not attachable in-tree", cfg: on,
			in: Input{PV: azureFilePV("pv-af", "share1", strPtr("default")), NodeName: testNode, CSINode: csiNodeWith(gcePlugin)},
			want: want{mech: MechanismNotAttachable, plugin: azureFilePlugin, inTree: azureFilePlugin, driver: azureFileDriver, handle: "#acct#share1#pv-af#default",
				key: "file.csi.azure.com^#acct#share1#pv-af#default", reason: []string{"no attach phase"}}},
		{name: "azure-file PV without secret namespace or claim is a translation error", cfg: complete(azureFilePlugin),
			in: Input{PV: func() *v1.PersistentVolume {
				pv := azureFilePV("pv-af", "share1", nil)
				pv.Spec.ClaimRef = nil
				return pv
			}(), NodeName: testNode},
			want: want{mech: MechanismError, plugin: azureFilePlugin, inTree: azureFilePlugin, driver: azureFileDriver, reason: []string{"secretNamespace"}}},

		// ---- Cinder ----
		{name: "cinder PV complete", cfg: complete(cinderPlugin),
			in: Input{PV: cinderPV("pv-cinder", "5d7e-11"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: cinderPlugin, inTree: cinderPlugin, driver: cinderDriver, handle: "5d7e-11",
				unique: "kubernetes.io/csi/cinder.csi.openstack.org^5d7e-11", key: "cinder.csi.openstack.org^5d7e-11", sourcePV: "pv-cinder"}},
		{name: "cinder PV off stays in-tree", cfg: off(cinderPlugin),
			in: Input{PV: cinderPV("pv-cinder", "5d7e-11"), NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: cinderPlugin, inTree: cinderPlugin, driver: cinderDriver, handle: "5d7e-11",
				unique: "kubernetes.io/cinder/5d7e-11", key: "cinder.csi.openstack.org^5d7e-11"}},

		// ---- vSphere ----
		{name: "vsphere-volume PV complete", cfg: complete(vspherePlugin),
			in: Input{PV: vspherePV("pv-vs", vmdk), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: vspherePlugin, inTree: vspherePlugin, driver: vsphereDriver, handle: vmdk,
				unique: "kubernetes.io/csi/csi.vsphere.vmware.com^" + vmdk, key: "csi.vsphere.vmware.com^" + vmdk, sourcePV: "pv-vs"}},
		{name: "vsphere-volume PV on not migrated stays in-tree", cfg: on,
			in: Input{PV: vspherePV("pv-vs", vmdk), NodeName: testNode, CSINode: csiNodeWith()},
			want: want{mech: MechanismInTree, plugin: vspherePlugin, inTree: vspherePlugin, driver: vsphereDriver, handle: vmdk,
				unique: "kubernetes.io/vsphere-volume/" + vmdk, key: "csi.vsphere.vmware.com^" + vmdk}},

		// ---- Portworx ----
		{name: "portworx-volume PV complete", cfg: complete(portworxPlugin),
			in: Input{PV: portworxPV("pv-px", "px-123"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: portworxPlugin, inTree: portworxPlugin, driver: portworxDriver, handle: "px-123",
				unique: "kubernetes.io/csi/pxd.portworx.com^px-123", key: "pxd.portworx.com^px-123", sourcePV: "pv-px"}},
		{name: "portworx-volume PV complete with attachRequired false needs no attach", cfg: complete(portworxPlugin),
			in: Input{PV: portworxPV("pv-px", "px-123"), NodeName: testNode, CSIDrivers: withDriver(portworxDriver, boolPtr(false))},
			want: want{mech: MechanismCSINoAttach, plugin: portworxPlugin, inTree: portworxPlugin, driver: portworxDriver, handle: "px-123",
				unique: "kubernetes.io/csi/pxd.portworx.com^px-123", key: "pxd.portworx.com^px-123"}},
		{name: "portworx-volume PV off is not attachable in-tree", cfg: off(portworxPlugin),
			in: Input{PV: portworxPV("pv-px", "px-123"), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: portworxPlugin, inTree: portworxPlugin, driver: portworxDriver, handle: "px-123",
				key: "pxd.portworx.com^px-123", reason: []string{"no attach phase"}}},

		// ---- inline in-tree volumes ----
		{name: "inline gce-pd complete uses translated inline spec", cfg: complete(gcePlugin),
			in: Input{InlineVolume: inline("data", v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-in"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("UNSPECIFIED", "pd-in"),
				unique: "kubernetes.io/csi/" + gceKey("UNSPECIFIED", "pd-in"), key: gceKey("UNSPECIFIED", "pd-in"), inlineSource: true}},
		{name: "inline gce-pd read-only translates to ROX and may multi-attach", cfg: complete(gcePlugin),
			in: Input{InlineVolume: inline("data", v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "pd-in", ReadOnly: true}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("UNSPECIFIED", "pd-in"),
				unique: "kubernetes.io/csi/" + gceKey("UNSPECIFIED", "pd-in"), key: gceKey("UNSPECIFIED", "pd-in"), inlineSource: true, multi: true}},
		{name: "inline aws-ebs on migrated node uses inline spec", cfg: on,
			in: Input{InlineVolume: inline("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-0inline"}}), PodNamespace: ns, NodeName: testNode, CSINode: csiNodeWith(allMigrated)},
			want: want{mech: MechanismCSI, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0inline",
				unique: "kubernetes.io/csi/ebs.csi.aws.com^vol-0inline", key: "ebs.csi.aws.com^vol-0inline", inlineSource: true}},
		{name: "inline aws-ebs on not migrated node stays in-tree", cfg: on,
			in: Input{InlineVolume: inline("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0inline"}}), PodNamespace: ns, NodeName: testNode, CSINode: csiNodeWith(gcePlugin)},
			want: want{mech: MechanismInTree, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0inline",
				unique: "kubernetes.io/aws-ebs/vol-0inline", key: "ebs.csi.aws.com^vol-0inline"}},
		{name: "inline aws-ebs on without CSINode waits", cfg: on,
			in: Input{InlineVolume: inline("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0inline"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismWait, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0inline", key: "ebs.csi.aws.com^vol-0inline",
				cause: WaitNodeMigrationState, reason: []string{`CSINode "node-1" does not exist yet`}}},
		{name: "inline azure-file complete uses the pod namespace for the secret", cfg: complete(azureFilePlugin),
			in: Input{InlineVolume: inline("files", v1.VolumeSource{AzureFile: &v1.AzureFileVolumeSource{SecretName: "azure-storage-account-acct-secret", ShareName: "s"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: azureFilePlugin, inTree: azureFilePlugin, driver: azureFileDriver, handle: "#acct#s#files#team-a",
				unique: "kubernetes.io/csi/file.csi.azure.com^#acct#s#files#team-a", key: "file.csi.azure.com^#acct#s#files#team-a", inlineSource: true, multi: true}},
		{name: "inline vsphere-volume with storage policy does not crash the engine", cfg: complete(vspherePlugin),
			in:   Input{InlineVolume: inline("vs", v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: vmdk, StoragePolicyName: "gold"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismError, plugin: vspherePlugin, inTree: vspherePlugin, driver: vsphereDriver, reason: []string{"cannot translate", `"vs"`, "failed unexpectedly"}}},
		{name: "inline cinder off stays in-tree", cfg: off(cinderPlugin),
			in: Input{InlineVolume: inline("c", v1.VolumeSource{Cinder: &v1.CinderVolumeSource{VolumeID: "c-1"}}), PodNamespace: ns, NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: cinderPlugin, inTree: cinderPlugin, driver: cinderDriver, handle: "c-1",
				unique: "kubernetes.io/cinder/c-1", key: "cinder.csi.openstack.org^c-1"}},

		// ---- not attachable ----
		{name: "inline configMap is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("cfg", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/configmap", reason: []string{"no attach phase"}}},
		{name: "inline secret is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("s", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/secret"}},
		{name: "inline emptyDir is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("tmp", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/empty-dir"}},
		{name: "inline projected is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("kube-api-access", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/projected"}},
		{name: "inline hostPath is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var"}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/host-path"}},
		{name: "inline downwardAPI is not attachable", cfg: on,
			in:   Input{InlineVolume: inline("podinfo", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/downward-api"}},
		{name: "nfs PV is not attachable", cfg: on,
			in:   Input{PV: pvWith("pv-nfs", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/p"}}, rwx), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/nfs"}},
		{name: "local PV is not attachable", cfg: on,
			in:   Input{PV: pvWith("pv-local", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/disks/1"}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/local-volume"}},
		{name: "rbd PV of a removed plugin is not attachable", cfg: on,
			in:   Input{PV: pvWith("pv-rbd", v1.PersistentVolumeSource{RBD: &v1.RBDPersistentVolumeSource{CephMonitors: []string{"m"}, RBDImage: "img"}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/rbd", reason: []string{"removed", `"pv-rbd"`}}},

		// ---- attachable in-tree plugins outside the translation table ----
		{name: "iscsi PV is attached in-tree with portal iqn lun volume id", cfg: on,
			in:   Input{PV: pvWith("pv-iscsi", v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 2}}), NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: "kubernetes.io/iscsi", unique: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2001-04.com.example:storage:2", key: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.2001-04.com.example:storage:2"}},
		{name: "fc PV is attached in-tree with wwns and lun volume id", cfg: on,
			in:   Input{PV: pvWith("pv-fc", v1.PersistentVolumeSource{FC: &v1.FCVolumeSource{TargetWWNs: []string{"500a0981891b8dc5", "500a0981991b8dc5"}, Lun: func() *int32 { l := int32(1); return &l }()}}, rox), NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: "kubernetes.io/fc", unique: "kubernetes.io/fc/[500a0981891b8dc5 500a0981991b8dc5]:1", key: "kubernetes.io/fc/[500a0981891b8dc5 500a0981991b8dc5]:1", multi: true}},
		{name: "inline iscsi read-write may not multi-attach", cfg: on,
			in:   Input{InlineVolume: inline("lun", v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1", IQN: "iqn.x", Lun: 0}}), NodeName: testNode},
			want: want{mech: MechanismInTree, plugin: "kubernetes.io/iscsi", unique: "kubernetes.io/iscsi/10.0.0.1:iqn.x:0", key: "kubernetes.io/iscsi/10.0.0.1:iqn.x:0"}},
		{name: "iscsi PV without iqn is an error", cfg: on,
			in:   Input{PV: pvWith("pv-iscsi", v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1"}}), NodeName: testNode},
			want: want{mech: MechanismError, plugin: "kubernetes.io/iscsi", reason: []string{`"pv-iscsi"`, "iqn"}}},

		// ---- bad input ----
		{name: "PV without any volume source is an error", cfg: on,
			in:   Input{PV: pvWith("pv-empty", v1.PersistentVolumeSource{}), NodeName: testNode},
			want: want{mech: MechanismError, reason: []string{`"pv-empty"`, "no volume source"}}},
		{name: "nil PV and nil inline volume is an error", cfg: on,
			in:   Input{NodeName: testNode},
			want: want{mech: MechanismError, reason: []string{"neither"}}},
		{name: "both PV and inline volume is an error", cfg: on,
			in:   Input{PV: csiPV("pv", "d", "h"), InlineVolume: inline("v", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismError, reason: []string{"exactly one"}}},
		{name: "inline claim reference must be resolved first", cfg: on,
			in:   Input{InlineVolume: inline("data", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}), NodeName: testNode},
			want: want{mech: MechanismError, reason: []string{"PodVolumes"}}},
		{name: "inline volume without source is an error", cfg: on,
			in:   Input{InlineVolume: inline("nothing", v1.VolumeSource{}), NodeName: testNode},
			want: want{mech: MechanismError, reason: []string{`"nothing"`}}},
		{name: "missing node name is an error", cfg: on,
			in:   Input{PV: csiPV("pv", "d", "h")},
			want: want{mech: MechanismError, reason: []string{"node name"}}},
		{name: "invalid mode in config is an error", cfg: cfgWith(NodeSourceCSINode, gcePlugin, "sometimes"),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("us-central1-a", "pd-1"), key: gceKey("us-central1-a", "pd-1"), reason: []string{`"sometimes"`}}},
		{name: "invalid node source in config is an error when the node must be asked", cfg: &Config{NodeSource: "kubelet"},
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: want{mech: MechanismError, plugin: gcePlugin, inTree: gcePlugin, driver: gceDriver, handle: gceHandle("us-central1-a", "pd-1"), key: gceKey("us-central1-a", "pd-1"), reason: []string{`"kubelet"`, "csinode"}}},
		{name: "invalid node source does not affect volumes that never ask the node", cfg: &Config{NodeSource: "kubelet"},
			in:   Input{InlineVolume: inline("cfg", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}), NodeName: testNode},
			want: want{mech: MechanismNotAttachable, plugin: "kubernetes.io/configmap"}},
		{name: "nil config behaves as mode on with CSINode source", cfg: nil,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeWith(gcePlugin)},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "plugin missing from config modes is on", cfg: &Config{Modes: map[string]Mode{awsPlugin: ModeOff}, NodeSource: NodeSourceCSINode},
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode},
			want: gceWait("us-central1-a", "pd-1", "CSINode")},
		{name: "native CSI PV is unaffected by migration config and the migrated-plugins annotation", cfg: cfgWith(NodeSourceCSINodeInfo, gcePlugin, "off"),
			in:   Input{PV: csiPV("pv-pd", gceDriver, "projects/p/zones/z/disks/d"), NodeName: testNode, CSINode: csiNodeWith()},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: gceDriver, handle: "projects/p/zones/z/disks/d", unique: "kubernetes.io/csi/pd.csi.storage.gke.io^projects/p/zones/z/disks/d", key: "pd.csi.storage.gke.io^projects/p/zones/z/disks/d", sourcePV: "pv-pd"}},

		// ---- driver registration: no VolumeAttachment before the node lists the driver ----
		{name: "native CSI PV on a node whose CSINode does not list the driver waits for registration", cfg: on,
			in: Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSINode: csiNodeListing(nil, "nfs.csi.k8s.io")},
			want: want{mech: MechanismWait, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", key: "hostpath.csi.k8s.io^h1", cause: WaitDriverRegistration,
				reason: []string{`waiting for CSI driver "hostpath.csi.k8s.io" to register on node "node-1"`, `CSINode "node-1" spec.drivers does not list "hostpath.csi.k8s.io"`, "no attach, no detach", "Once registered: native CSI volume"}}},
		{name: "native CSI PV on a node without CSINode or CSINodeInfo attaches as before", cfg: on,
			in:   Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", unique: "kubernetes.io/csi/hostpath.csi.k8s.io^h1", key: "hostpath.csi.k8s.io^h1", sourcePV: "pv-csi"}},
		{name: "gce-pd PV complete on a node without CSINode attaches as before", cfg: complete(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSIDrivers: driverMap{}},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "native CSI PV of a driver without attach does not wait for registration", cfg: on,
			in:   Input{PV: csiPV("pv-nfs", "nfs.csi.k8s.io", "server#share"), NodeName: testNode, CSINode: csiNodeListing(nil), CSIDrivers: withDriver("nfs.csi.k8s.io", boolPtr(false))},
			want: want{mech: MechanismCSINoAttach, plugin: CSIPluginName, driver: "nfs.csi.k8s.io", handle: "server#share", unique: "kubernetes.io/csi/nfs.csi.k8s.io^server#share", key: "nfs.csi.k8s.io^server#share"}},
		{name: "gce-pd PV on a node that reports gce-pd migrated before its driver registered waits keeping every name", cfg: on,
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeListing(strPtr(allMigrated), awsDriver)},
			want: with(gceWait("us-central1-a", "pd-1", `CSINode "node-1" spec.drivers does not list "pd.csi.storage.gke.io"`, "Once registered: kubernetes.io/gce-pd is migrated on node"),
				func(w *want) { w.cause = WaitDriverRegistration })},
		{name: "gce-pd PV complete on a node whose CSINode lists other drivers waits", cfg: complete(gcePlugin),
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeListing(nil, awsDriver)},
			want: with(gceWait("us-central1-a", "pd-1", "Once registered: migration of kubernetes.io/gce-pd is complete"),
				func(w *want) { w.cause = WaitDriverRegistration })},
		{name: "gce-pd PV on a not migrated node stays in-tree whatever the driver registration", cfg: on,
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeListing(strPtr(awsPlugin))},
			want: gceInTree("us-central1-a", "pd-1")},
		{name: "gce-pd PV off never waits for registration", cfg: off(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeListing(nil)},
			want: gceInTree("us-central1-a", "pd-1")},
		{name: "inline aws-ebs migrated before its driver registered waits", cfg: on,
			in: Input{InlineVolume: inline("ebs", v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0inline"}}), PodNamespace: ns, NodeName: testNode, CSINode: csiNodeListing(strPtr(awsPlugin))},
			want: want{mech: MechanismWait, plugin: awsPlugin, inTree: awsPlugin, driver: awsDriver, handle: "vol-0inline", key: "ebs.csi.aws.com^vol-0inline",
				cause: WaitDriverRegistration, reason: []string{`does not list "ebs.csi.aws.com"`}}},
		{name: "a volume the node lists as attached does not wait when its driver leaves the CSINode", cfg: on,
			in: Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSINode: csiNodeListing(nil),
				Node: &v1.Node{Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{{Name: "kubernetes.io/csi/hostpath.csi.k8s.io^h1"}}}}},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", unique: "kubernetes.io/csi/hostpath.csi.k8s.io^h1", key: "hostpath.csi.k8s.io^h1", sourcePV: "pv-csi"}},
		{name: "a migrated volume the node lists attached in-tree does not wait for the driver either", cfg: on,
			in: Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINode: csiNodeListing(strPtr(gcePlugin)),
				Node: &v1.Node{Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{{Name: "kubernetes.io/gce-pd/pd-1"}}}}},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "a volume listed on the node under another name still waits", cfg: on,
			in: Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSINode: csiNodeListing(nil),
				Node: &v1.Node{Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{{Name: "kubernetes.io/csi/hostpath.csi.k8s.io^h2"}}}}},
			want: want{mech: MechanismWait, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", key: "hostpath.csi.k8s.io^h1", cause: WaitDriverRegistration}},
		{name: "csinodeinfo source without CSINode: an available entry is the registration", cfg: info(gcePlugin),
			in:   Input{PV: gcePV("pv-gce", "pd-1", "us-central1-a"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus(gceDriver, true, csinodeinfo.VolumePluginMechanismCSI))},
			want: gceCSI("us-central1-a", "pd-1", "pv-gce")},
		{name: "csinodeinfo with an unavailable entry for a native driver waits", cfg: info(gcePlugin),
			in: Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSINodeInfo: nodeInfo(driverStatus("hostpath.csi.k8s.io", false, csinodeinfo.VolumePluginMechanismCSI))},
			want: want{mech: MechanismWait, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", key: "hostpath.csi.k8s.io^h1", cause: WaitDriverRegistration,
				reason: []string{`CSINodeInfo "node-1" status.drivers[hostpath.csi.k8s.io] is not available`}}},
		{name: "a CSINode listing the driver wins over an unavailable CSINodeInfo entry", cfg: cfgWith(NodeSourceAuto),
			in:   Input{PV: csiPV("pv-csi", "hostpath.csi.k8s.io", "h1"), NodeName: testNode, CSINode: csiNodeListing(nil, "hostpath.csi.k8s.io"), CSINodeInfo: nodeInfo(driverStatus("hostpath.csi.k8s.io", false, csinodeinfo.VolumePluginMechanismCSI))},
			want: want{mech: MechanismCSI, plugin: CSIPluginName, driver: "hostpath.csi.k8s.io", handle: "h1", unique: "kubernetes.io/csi/hostpath.csi.k8s.io^h1", key: "hostpath.csi.k8s.io^h1", sourcePV: "pv-csi"}},
	}
}

func TestDecide(t *testing.T) {
	cases := decideCases()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			before := snapshot(&in)
			got := Decide(tc.cfg, &in)
			checkDecision(t, got, tc.want, &in)
			if after := snapshot(&in); after != before {
				t.Errorf("Decide modified its input:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	t.Logf("%d Decide cases", len(cases))
}

// snapshot renders the mutable parts of an input for a did-it-change check.
func snapshot(in *Input) string {
	var b strings.Builder
	if in.PV != nil {
		b.WriteString(in.PV.String())
	}
	if in.InlineVolume != nil {
		b.WriteString(in.InlineVolume.String())
	}
	return b.String()
}

func checkDecision(t *testing.T, got Decision, w want, in *Input) {
	t.Helper()
	if got.Mechanism != w.mech {
		t.Errorf("Mechanism = %q, want %q (reason: %s)", got.Mechanism, w.mech, got.Reason)
	}
	str := func(field, g, w string) {
		if g != w {
			t.Errorf("%s = %q, want %q", field, g, w)
		}
	}
	str("Plugin", got.Plugin, w.plugin)
	str("InTreePlugin", got.InTreePlugin, w.inTree)
	str("Driver", got.Driver, w.driver)
	str("VolumeHandle", got.VolumeHandle, w.handle)
	str("UniqueName", got.UniqueName, w.unique)
	str("VolumeKey", got.VolumeKey, w.key)
	wantVA := ""
	if w.mech == MechanismCSI {
		wantVA = expectedVAName(w.handle, w.driver, in.NodeName)
	}
	str("VolumeAttachmentName", got.VolumeAttachmentName, wantVA)
	gotPV := ""
	if got.Source.PersistentVolumeName != nil {
		gotPV = *got.Source.PersistentVolumeName
	}
	str("Source.PersistentVolumeName", gotPV, w.sourcePV)
	if (got.Source.InlineVolumeSpec != nil) != w.inlineSource {
		t.Errorf("Source.InlineVolumeSpec set = %v, want %v", got.Source.InlineVolumeSpec != nil, w.inlineSource)
	}
	if got.Source.InlineVolumeSpec != nil {
		if csi := got.Source.InlineVolumeSpec.CSI; csi == nil || csi.Driver != w.driver || csi.VolumeHandle != w.handle {
			t.Errorf("Source.InlineVolumeSpec.CSI = %+v, want driver %q handle %q", csi, w.driver, w.handle)
		}
	}
	if got.WaitCause != w.cause {
		t.Errorf("WaitCause = %q, want %q", got.WaitCause, w.cause)
	}
	if got.MultiAttachAllowed != w.multi {
		t.Errorf("MultiAttachAllowed = %v, want %v", got.MultiAttachAllowed, w.multi)
	}
	if got.Reason == "" {
		t.Errorf("Reason is empty")
	}
	for _, sub := range w.reason {
		if !strings.Contains(got.Reason, sub) {
			t.Errorf("Reason %q does not contain %q", got.Reason, sub)
		}
	}
	notes := strings.Join(got.Notes, "\n")
	for _, sub := range w.notes {
		if !strings.Contains(notes, sub) {
			t.Errorf("Notes %q do not contain %q", notes, sub)
		}
	}
	if len(w.notes) == 0 && len(got.Notes) > 0 {
		t.Errorf("unexpected Notes %q", got.Notes)
	}
}

// TestVolumeAttachmentNameKnownValue pins one name to a value computed outside Go
// (printf 'vol-0123ebs.csi.aws.comnode-1' | sha256sum), so a change in the concatenation
// order or encoding cannot go unnoticed.
func TestVolumeAttachmentNameKnownValue(t *testing.T) {
	const want = "csi-07ecfc852da5dfbbd7b01cdb93df1864837f37ce73ed4e3cb83ccc4a0168a004"
	got := VolumeAttachmentName("vol-0123", "ebs.csi.aws.com", "node-1")
	if got != want {
		t.Fatalf("VolumeAttachmentName = %q, want %q", got, want)
	}
	if got != expectedVAName("vol-0123", "ebs.csi.aws.com", "node-1") {
		t.Fatalf("VolumeAttachmentName disagrees with the independent computation")
	}
	long := strings.Repeat("h", 300)
	if VolumeAttachmentName(long, "d", "n") != expectedVAName(long, "d", "n") {
		t.Fatalf("VolumeAttachmentName is wrong for inputs longer than its stack buffer")
	}
}

// TestVolumeKeyStableAcrossMigration checks the property VolumeKey exists for: the same PV on
// a not-migrated and a migrated node has the same key but different unique names.
func TestVolumeKeyStableAcrossMigration(t *testing.T) {
	for _, pv := range []*v1.PersistentVolume{
		gcePV("pv-gce", "pd-1", "us-central1-a"), awsPV("pv-ebs", "aws://us-east-1a/vol-1"),
		azureDiskPV("pv-ad", azureURI, nil), cinderPV("pv-c", "c"), vspherePV("pv-vs", vmdk),
	} {
		cfg := cfgWith(NodeSourceCSINode)
		inTree := Decide(cfg, &Input{PV: pv, NodeName: testNode, CSINode: csiNodeWith()})
		migrated := Decide(cfg, &Input{PV: pv, NodeName: testNode, CSINode: csiNodeWith(allMigrated)})
		if inTree.Mechanism != MechanismInTree || migrated.Mechanism != MechanismCSI {
			t.Fatalf("%s: mechanisms %s/%s, want in-tree/csi", pv.Name, inTree.Mechanism, migrated.Mechanism)
		}
		if inTree.VolumeKey != migrated.VolumeKey || inTree.VolumeKey == "" {
			t.Errorf("%s: VolumeKey %q (in-tree) != %q (csi)", pv.Name, inTree.VolumeKey, migrated.VolumeKey)
		}
		if inTree.UniqueName == migrated.UniqueName {
			t.Errorf("%s: unique names should differ between mechanisms, both %q", pv.Name, inTree.UniqueName)
		}
	}
}

// TestDecideEveryMechanismCovered guards the table: each of the six mechanisms, each mode and
// each node source appears.
func TestDecideEveryMechanismCovered(t *testing.T) {
	mechs := map[Mechanism]bool{}
	plugins := map[string]bool{}
	for _, tc := range decideCases() {
		mechs[tc.want.mech] = true
		if tc.in.PV != nil && tc.want.inTree != "" {
			plugins[tc.want.inTree] = true
		}
	}
	for _, m := range Mechanisms {
		if !mechs[m] {
			t.Errorf("no Decide case expects mechanism %q", m)
		}
	}
	for _, p := range MigratablePlugins {
		if !plugins[p] {
			t.Errorf("no Decide case has a PersistentVolume of plugin %q", p)
		}
	}
	if n := len(decideCases()); n < 40 {
		t.Errorf("only %d Decide cases, want at least 40", n)
	}
}

func TestDecideIgnoresUnrelatedCSIDriver(t *testing.T) {
	drivers := driverMap{"other.csi.example.com": &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "other.csi.example.com"}, Spec: storagev1.CSIDriverSpec{AttachRequired: boolPtr(false)}}}
	got := Decide(cfgWith(NodeSourceCSINode, gcePlugin, "complete"), &Input{PV: gcePV("pv", "pd", "us-central1-a"), NodeName: testNode, CSIDrivers: drivers})
	if got.Mechanism != MechanismCSI {
		t.Fatalf("Mechanism = %s, want csi", got.Mechanism)
	}
}

func TestDecideNilInput(t *testing.T) {
	if got := Decide(nil, nil); got.Mechanism != MechanismError || got.Reason == "" {
		t.Fatalf("Decide(nil, nil) = %+v, want an error decision", got)
	}
}
