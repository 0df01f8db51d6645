package migration

import (
	"fmt"
	"strconv"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csitrans "k8s.io/csi-translation-lib"
)

// translator is the package's only package-level value besides constant tables: the
// translation library's stateless translator, shared so Decide does not build one per call.
var translator = csitrans.New()

// discardLogger is handed to csi-translation-lib, which wants a logger; the engine itself
// never logs (its caller logs the Decision).
var discardLogger = logr.Discard()

// Endings of the reasons of the CSI path, after the evidence of the driver-info source.
const (
	nativeCSIPrefix = "native CSI volume; "
	soAttach        = ", so a VolumeAttachment is used"
	soNoAttach      = ", so nothing is attached and the kubelet mounts the volume directly"
)

// Decide decides how one volume reaches one node. It is pure: it reads cfg and in (never
// modifying them), performs no I/O, does not log, and never panics on malformed objects; any
// input it cannot decide safely yields MechanismError with a reason for the operator.
//
// The rules, in order:
//  1. A PV with spec.csi is native CSI: MechanismCSI, or MechanismCSINoAttach when the
//     driver-info source (cfg.DriverSource, see DriverAttachRequired) says the driver needs
//     no attach: a storage.k8s.io/v1 CSIDriver with attachRequired=false, or a seed-API one
//     with attachRequired false or unset. No CSIDriver object means attach is required. The
//     reason names the object that decided. Inline CSI (ephemeral) volumes are never
//     attached: not-attachable.
//  2. A PV or inline volume of a plugin in the translation table is translated with
//     csi-translation-lib (failure => error in every mode: the key below needs it, and a
//     volume that cannot be translated cannot survive a later flip to CSI). Mode complete => the CSI path; mode on => the
//     node source decides: migrated => CSI path, not migrated => in-tree (not-attachable for
//     plugins without an attach phase: azure-file, portworx), unknown => wait; mode off =>
//     in-tree, but a node reporting the plugin migrated is version skew => error.
//  3. iSCSI, FC and FlexVolume are attachable in-tree plugins outside the translation table:
//     in-tree. Everything else with a source (configMap, nfs, hostPath, removed plugins, ...)
//     is not-attachable. A volume with no source is an error.
//
// VolumeKey is the translated or native <driver>^<handle> whenever translation is possible,
// for every mechanism, so a node flipping between in-tree and CSI keeps the same key. For
// volumes that cannot be translated (iSCSI, FC, FlexVolume) it is the in-tree unique name.
//
// in.Node is not consulted by the current rules; it is part of Input so that rules about the
// node itself can be added without changing the contract. A nil cfg behaves as a Config with
// no modes (every plugin on) and the csinode source.
func Decide(cfg *Config, in *Input) Decision {
	if in == nil {
		return Decision{Mechanism: MechanismError, Reason: "no input was given to the decision engine; this is a bug in the caller"}
	}
	if in.PV != nil && in.InlineVolume != nil {
		return Decision{Mechanism: MechanismError, Reason: "both a PersistentVolume (" + strconv.Quote(in.PV.Name) + ") and an inline volume (" + strconv.Quote(in.InlineVolume.Name) + ") were given; this is a bug in the caller, which must pass exactly one"}
	}
	if in.PV == nil && in.InlineVolume == nil {
		return Decision{Mechanism: MechanismError, Reason: "neither a PersistentVolume nor an inline volume was given; this is a bug in the caller"}
	}
	if in.NodeName == "" {
		return Decision{Mechanism: MechanismError, Reason: "no node name was given, so no VolumeAttachment can be named; this is a bug in the caller"}
	}
	if in.PV != nil {
		return decidePV(cfg, in, in.PV)
	}
	return decideInline(cfg, in, in.InlineVolume)
}

func decidePV(cfg *Config, in *Input, pv *v1.PersistentVolume) Decision {
	if pv.Spec.CSI != nil {
		return decideNativeCSI(cfg, in, pv)
	}
	if translator.IsPVMigratable(pv) {
		plugin, err := translator.GetInTreePluginNameFromSpec(pv, nil)
		if err != nil {
			return Decision{Mechanism: MechanismError, Reason: fmt.Sprintf("cannot find the in-tree plugin of PersistentVolume %q: %v; this is a bug, please report it", pv.Name, err)}
		}
		return decideMigratable(cfg, in, plugin, pv, nil)
	}
	other, ok := pvOtherPlugin(&pv.Spec.PersistentVolumeSource)
	if !ok {
		return Decision{Mechanism: MechanismError, Reason: "PersistentVolume " + strconv.Quote(pv.Name) + " has no volume source, so there is nothing to attach; fix or recreate the PersistentVolume with exactly one volume source"}
	}
	return decideOther(other, pv, nil, pv.Spec.AccessModes)
}

func decideNativeCSI(cfg *Config, in *Input, pv *v1.PersistentVolume) Decision {
	src := pv.Spec.CSI
	if src.Driver == "" || src.VolumeHandle == "" {
		return Decision{Mechanism: MechanismError, Plugin: CSIPluginName, Driver: src.Driver, VolumeHandle: src.VolumeHandle,
			Reason: "PersistentVolume " + strconv.Quote(pv.Name) + " has a spec.csi source without a driver or volumeHandle; fix the PersistentVolume so both are set"}
	}
	d := Decision{
		Plugin:             CSIPluginName,
		Driver:             src.Driver,
		VolumeHandle:       src.VolumeHandle,
		UniqueName:         CSIUniqueName(src.Driver, src.VolumeHandle),
		MultiAttachAllowed: multiAttach(pv.Spec.AccessModes),
	}
	d.VolumeKey = d.UniqueName[len(csiUniquePrefix):]
	a := DriverAttachRequired(cfg.driverSource(), in.CSIDrivers, src.Driver)
	if a.Note != "" {
		d.Notes = append(d.Notes, a.Note)
	}
	switch {
	case a.Invalid:
		d.Mechanism = MechanismError
		d.UniqueName = ""
		d.Reason = nativeCSIPrefix + a.Evidence
		return d
	case !a.Required:
		d.Mechanism = MechanismCSINoAttach
		d.Reason = nativeCSIPrefix + a.Evidence + soNoAttach
		return d
	}
	d.Reason = nativeCSIPrefix + a.Evidence + soAttach
	d.Mechanism = MechanismCSI
	d.VolumeAttachmentName = VolumeAttachmentName(src.VolumeHandle, src.Driver, in.NodeName)
	d.Source.PersistentVolumeName = &pv.Name
	return awaitRegistration(d, in)
}

func decideInline(cfg *Config, in *Input, vol *v1.Volume) Decision {
	s := &vol.VolumeSource
	switch {
	case s.PersistentVolumeClaim != nil || s.Ephemeral != nil:
		return Decision{Mechanism: MechanismError, Reason: "pod volume " + strconv.Quote(vol.Name) + " is backed by a PersistentVolumeClaim and must be resolved to its PersistentVolume before deciding (see PodVolumes); this is a bug in the caller"}
	case s.CSI != nil:
		return Decision{Mechanism: MechanismNotAttachable, Plugin: CSIPluginName, Driver: s.CSI.Driver,
			Reason: "CSI ephemeral inline volume: the kubelet calls the driver directly and the attach/detach controller never attaches it"}
	}
	if translator.IsInlineMigratable(vol) {
		plugin, err := translator.GetInTreePluginNameFromSpec(nil, vol)
		if err != nil {
			return Decision{Mechanism: MechanismError, Reason: fmt.Sprintf("cannot find the in-tree plugin of pod volume %q: %v; this is a bug, please report it", vol.Name, err)}
		}
		return decideMigratable(cfg, in, plugin, nil, vol)
	}
	other, ok := inlineOtherPlugin(s)
	if !ok {
		return Decision{Mechanism: MechanismError, Reason: "pod volume " + strconv.Quote(vol.Name) + " has no volume source this controller knows, so it cannot be decided; check the pod spec, or upgrade adc if it uses a newer volume type"}
	}
	return decideOther(other, nil, vol, nil)
}

// decideMigratable handles a PV (pv != nil) or inline volume (vol != nil) of a plugin in the
// translation table.
func decideMigratable(cfg *Config, in *Input, plugin string, pv *v1.PersistentVolume, vol *v1.Volume) Decision {
	driver, err := translator.GetCSINameFromInTreeName(plugin)
	d := Decision{Plugin: plugin, InTreePlugin: plugin, Driver: driver}
	if err != nil {
		d.Mechanism = MechanismError
		d.Reason = fmt.Sprintf("csi-translation-lib knows plugin %s but not its CSI driver: %v; this is a bug, please report it", plugin, err)
		return d
	}
	volumeID, field := migratableVolumeID(pv, vol)
	if volumeID == "" {
		d.Mechanism = MechanismError
		d.Reason = describe(pv, vol) + " has an empty " + field + ", so the volume cannot be identified; set " + field + " to the volume's id"
		return d
	}
	translated, err := translate(pv, vol, in.PodNamespace)
	if err == nil && (translated == nil || translated.Spec.CSI == nil || translated.Spec.CSI.VolumeHandle == "") {
		err = fmt.Errorf("the translation has no CSI volume handle")
	}
	if err != nil {
		d.Mechanism = MechanismError
		d.Reason = "cannot translate " + describe(pv, vol) + " (" + plugin + ") to CSI driver " + driver + ": " + err.Error() + "; " + translationHint(plugin, vol != nil)
		return d
	}
	csi := translated.Spec.CSI
	d.Driver = csi.Driver
	d.VolumeHandle = csi.VolumeHandle
	// One allocation serves both: the key is the unique name without its plugin prefix.
	csiUnique := CSIUniqueName(csi.Driver, csi.VolumeHandle)
	d.VolumeKey = csiUnique[len(csiUniquePrefix):]
	if inTreeAttachable(plugin) {
		// Whatever the mechanism, the controller must recognise an attachment the in-tree
		// plugin made (before a migration flip) under this name.
		d.InTreeUniqueName = InTreeUniqueName(plugin, volumeID)
	}

	// In-tree access modes: the PV's own; an inline volume has none, so the modes the
	// translation derives from it (ReadOnly => ROX for gce-pd and portworx, else RWO) stand in.
	inTreeModes := translated.Spec.AccessModes
	var pvName *string
	if pv != nil {
		inTreeModes = pv.Spec.AccessModes
		pvName = &pv.Name
	}

	mode := cfg.Mode(plugin)
	switch mode {
	case ModeComplete:
		d, why := csiPath(cfg, d, in, translated, pvName, csiUnique)
		d.Reason = "migration of " + plugin + " is complete, so the node is not consulted and the volume goes through CSI driver " + d.Driver + "; " + why
		return awaitRegistration(d, in)
	case ModeOn, ModeOff:
	default:
		d.Mechanism = MechanismError
		d.Reason = "migration mode " + strconv.Quote(string(mode)) + " of " + plugin + " is not valid; set --migration " + plugin + "=<mode> with one of " + joinModes()
		return d
	}

	src := cfg.source()
	if !src.Valid() {
		d.Mechanism = MechanismError
		d.Reason = "node migration source " + strconv.Quote(string(src)) + " is not valid, so adc cannot ask node " + strconv.Quote(in.NodeName) +
			" whether " + plugin + " is migrated; set --node-migration-source to one of " + joinSources()
		return d
	}
	node := NodeObjects{Name: in.NodeName, Node: in.Node, CSINode: in.CSINode, CSINodeInfo: in.CSINodeInfo}
	nm := NodePluginMigration(src, node, plugin, d.Driver)
	d.Notes = nm.Notes
	if mode == ModeOff {
		if nm.State == NodeStateMigrated {
			d.Mechanism = MechanismError
			d.Reason = "version skew: node " + strconv.Quote(in.NodeName) + " reports " + plugin + " as migrated to CSI (" + nm.Evidence +
				") but adc has migration of " + plugin + " off; set --migration " + plugin + "=on (or complete), or roll the node back to a kubelet that does not migrate " + plugin + "; adc holds the volume until then"
			return d
		}
		return inTreePath(d, plugin, volumeID, inTreeModes, "migration of "+plugin+" is off, so the in-tree plugin is used")
	}
	switch nm.State {
	case NodeStateMigrated:
		d, why := csiPath(cfg, d, in, translated, pvName, csiUnique)
		d.Reason = plugin + " is migrated on node \"" + in.NodeName + "\" (" + nm.Evidence + "), so the volume goes through CSI driver " + d.Driver + "; " + why
		return awaitRegistration(d, in)
	case NodeStateNotMigrated:
		return inTreePath(d, plugin, volumeID, inTreeModes, plugin+" is not migrated on node "+strconv.Quote(in.NodeName)+" ("+nm.Evidence+"), so the in-tree plugin is used")
	default:
		d.Mechanism = MechanismWait
		d.WaitCause = WaitNodeMigrationState
		d.Reason = nm.Evidence + ", so adc cannot tell whether " + plugin + " is migrated on node " + strconv.Quote(in.NodeName) +
			"; it holds the volume (no attach, no detach) and retries with backoff until the node reports"
		return d
	}
}

// csiPath finishes a decision for a translated volume that goes through its CSI driver and
// returns the clause explaining the CSIDriver rule (naming the object that decided), for the
// caller to append to its reason in a single concatenation.
func csiPath(cfg *Config, d Decision, in *Input, translated *v1.PersistentVolume, pvName *string, csiUnique string) (Decision, string) {
	d.UniqueName = csiUnique
	d.MultiAttachAllowed = multiAttach(translated.Spec.AccessModes)
	a := DriverAttachRequired(cfg.driverSource(), in.CSIDrivers, d.Driver)
	if a.Note != "" {
		d.Notes = append(d.Notes, a.Note)
	}
	switch {
	case a.Invalid:
		d.Mechanism = MechanismError
		d.UniqueName = ""
		return d, a.Evidence
	case !a.Required:
		d.Mechanism = MechanismCSINoAttach
		return d, a.Evidence + soNoAttach
	}
	why := a.Evidence + soAttach
	d.Mechanism = MechanismCSI
	d.VolumeAttachmentName = VolumeAttachmentName(d.VolumeHandle, d.Driver, in.NodeName)
	if pvName != nil {
		d.Source.PersistentVolumeName = pvName
	} else {
		d.Source.InlineVolumeSpec = &translated.Spec
	}
	return d, why
}

// inTreePath finishes a decision for a translatable volume that stays on its in-tree plugin.
func inTreePath(d Decision, plugin, volumeID string, accessModes []v1.PersistentVolumeAccessMode, reason string) Decision {
	if !inTreeAttachable(plugin) {
		d.Mechanism = MechanismNotAttachable
		d.Reason = reason + "; the in-tree " + plugin + " plugin has no attach phase, the kubelet mounts the volume directly"
		return d
	}
	d.Mechanism = MechanismInTree
	d.UniqueName = d.InTreeUniqueName
	if d.UniqueName == "" {
		d.UniqueName = InTreeUniqueName(plugin, volumeID)
	}
	d.MultiAttachAllowed = multiAttach(accessModes)
	d.Reason = reason + " and attaches the volume"
	return d
}

// decideOther decides a PV or inline volume whose plugin csi-translation-lib cannot
// translate. accessModes are the PV's (nil for inline volumes).
func decideOther(p otherPlugin, pv *v1.PersistentVolume, vol *v1.Volume, accessModes []v1.PersistentVolumeAccessMode) Decision {
	d := Decision{Plugin: p.name}
	what := describe(pv, vol)
	switch {
	case p.removed:
		d.Mechanism = MechanismNotAttachable
		d.Reason = "the in-tree " + p.name + " plugin has been removed from Kubernetes and has no CSI translation, so nothing can attach or mount " + what + "; move the data to a volume of a CSI driver"
		return d
	case !p.attachable:
		d.Mechanism = MechanismNotAttachable
		d.Reason = "the " + p.name + " volume type has no attach phase; the kubelet sets it up directly"
		return d
	}

	var volumeID string
	var err error
	var readOnly bool
	switch {
	case pv != nil && pv.Spec.ISCSI != nil:
		volumeID, err = iscsiVolumeID(pv.Spec.ISCSI.TargetPortal, pv.Spec.ISCSI.IQN, pv.Spec.ISCSI.Lun)
	case pv != nil && pv.Spec.FC != nil:
		volumeID, err = fcVolumeID(pv.Spec.FC.TargetWWNs, pv.Spec.FC.Lun, pv.Spec.FC.WWIDs)
	case pv != nil && pv.Spec.FlexVolume != nil:
		volumeID = pv.Name
	case vol != nil && vol.ISCSI != nil:
		volumeID, err = iscsiVolumeID(vol.ISCSI.TargetPortal, vol.ISCSI.IQN, vol.ISCSI.Lun)
		readOnly = vol.ISCSI.ReadOnly
	case vol != nil && vol.FC != nil:
		volumeID, err = fcVolumeID(vol.FC.TargetWWNs, vol.FC.Lun, vol.FC.WWIDs)
		readOnly = vol.FC.ReadOnly
	case vol != nil && vol.FlexVolume != nil:
		volumeID = vol.Name
		readOnly = vol.FlexVolume.ReadOnly
	}
	if err == nil && (p.name == "" || volumeID == "") {
		err = fmt.Errorf("the source does not name a driver or volume")
	}
	if err != nil {
		d.Mechanism = MechanismError
		d.Reason = "cannot identify " + what + " for the in-tree " + p.name + " plugin: " + err.Error() + "; fix the volume source"
		return d
	}
	d.Mechanism = MechanismInTree
	d.UniqueName = InTreeUniqueName(p.name, volumeID)
	d.InTreeUniqueName = d.UniqueName
	d.VolumeKey = d.UniqueName
	if pv != nil {
		d.MultiAttachAllowed = multiAttach(accessModes)
	} else {
		// Inline volumes carry no access modes; only a read-only one may be shared.
		d.MultiAttachAllowed = readOnly
	}
	d.Reason = p.name + " is an attachable in-tree plugin with no CSI migration, so the in-tree plugin attaches the volume"
	if (pv != nil && pv.Spec.FlexVolume != nil) || (vol != nil && vol.FlexVolume != nil) {
		d.Reason = "FlexVolume driver " + p.name + " is attached in-tree by the FlexVolume host if the driver supports attach"
		d.Notes = []string{"the unique name assumes the FlexVolume driver " + p.name + " does not implement getvolumename"}
	}
	return d
}

// multiAttach reports whether the access modes allow attaching to more than one node.
func multiAttach(modes []v1.PersistentVolumeAccessMode) bool {
	for _, m := range modes {
		if m == v1.ReadWriteMany || m == v1.ReadOnlyMany {
			return true
		}
	}
	return false
}

// translate runs csi-translation-lib on a PV or an inline volume. A panic inside the library
// (it has had nil dereferences on odd inputs) becomes an error: one bad volume must not take
// the controller down.
func translate(pv *v1.PersistentVolume, vol *v1.Volume, podNamespace string) (out *v1.PersistentVolume, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("csi-translation-lib failed unexpectedly (%v)", r)
		}
	}()
	if pv != nil {
		// The library deep-copies its input before translating. Hand it only what the
		// translators read (name, labels, annotations, spec) so it does not also copy
		// managedFields, owner references, finalizers and status on every decision.
		trimmed := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pv.Name, Namespace: pv.Namespace, Labels: pv.Labels, Annotations: pv.Annotations},
			Spec:       pv.Spec,
		}
		return translator.TranslateInTreePVToCSI(discardLogger, trimmed)
	}
	return translator.TranslateInTreeInlineVolumeToCSI(discardLogger, vol, podNamespace)
}

// describe names the volume for reasons: `PersistentVolume "pv-1"` or `pod volume "data"`.
func describe(pv *v1.PersistentVolume, vol *v1.Volume) string {
	if pv != nil {
		return "PersistentVolume " + strconv.Quote(pv.Name)
	}
	if vol != nil {
		return "pod volume " + strconv.Quote(vol.Name)
	}
	return "the volume"
}
