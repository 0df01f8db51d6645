package preflight

import (
	"sort"
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// Severity says whether a finding stops the step. The values are part of the JSON output.
type Severity string

const (
	// Blocks: moving the step now breaks something (a volume that cannot attach or mount, a
	// detach and re-attach, a kubelet that cannot follow); fix it first.
	Blocks Severity = "blocks"
	// Warns: the step works, but something changes or is worth knowing first.
	Warns Severity = "warns"
)

// Check names one kind of finding. The values are part of the JSON output and
// docs/operating.md lists them.
type Check string

// The checks, in the order docs/operating.md describes them.
const (
	// CheckDriverNotRegistered: a node that would use the plugin's CSI driver after the step
	// does not list it in its CSINode's spec.drivers.
	CheckDriverNotRegistered Check = "driver-not-registered"
	// CheckNoCSIDriver: the CSI driver has no CSIDriver object where --driver-info-source
	// looks, so attachRequired takes its default.
	CheckNoCSIDriver Check = "no-csidriver"
	// CheckLifecycleMode: the CSIDriver does not allow the Persistent lifecycle mode, in
	// which the kubelet mounts every migrated volume, inline ones included.
	CheckLifecycleMode Check = "lifecycle-mode"
	// CheckStorageClass: csi-translation-lib rejects or drops parameters of a StorageClass of
	// the in-tree provisioner.
	CheckStorageClass Check = "storageclass"
	// CheckUntranslatable: a PersistentVolume or inline volume of the plugin cannot be
	// translated to CSI.
	CheckUntranslatable Check = "untranslatable"
	// CheckPlacement: the translated volume loses the placement the in-tree one had, or a
	// node that would mount it does not match its translated node affinity.
	CheckPlacement Check = "placement"
	// CheckAttachLimit: a node would have more volumes of the driver attached than its
	// CSINode's allocatable.count.
	CheckAttachLimit Check = "attach-limit"
	// CheckKubeletVersion: a node's kubelet cannot follow the step (too old to migrate the
	// plugin, or too new to go back).
	CheckKubeletVersion Check = "kubelet-version"
	// CheckNodeNotMigrated: with complete a node that has not reported the plugin migrated
	// would get CSI volumes its kubelet expects in-tree.
	CheckNodeNotMigrated Check = "node-not-migrated"
	// CheckNodeMigrated: with off a node that reports the plugin migrated is version skew;
	// adc would hold its volumes of the plugin.
	CheckNodeMigrated Check = "node-migrated"
	// CheckPathChange: an attached volume whose next attach would go another way.
	CheckPathChange Check = "path-change"
	// CheckDrain: going back, a node with attached volumes that would change path must be
	// drained before its kubelet switches mode.
	CheckDrain Check = "drain"
	// CheckHeldAfterStep: a pair that would be held (wait or error) after the step and is
	// not now, for a reason no other finding names.
	CheckHeldAfterStep Check = "held-after-step"
	// CheckOtherController: kube-controller-manager's own attach/detach controller wrote last
	// what adc owns; it must be switched off before adc starts.
	CheckOtherController Check = "other-attach-detach-controller"
)

// Checks lists every check, for documentation and validation.
var Checks = []Check{CheckDriverNotRegistered, CheckNoCSIDriver, CheckLifecycleMode, CheckStorageClass, CheckUntranslatable,
	CheckPlacement, CheckAttachLimit, CheckKubeletVersion, CheckNodeNotMigrated, CheckNodeMigrated, CheckPathChange, CheckDrain, CheckHeldAfterStep,
	CheckOtherController}

// Object names the API object a finding is about.
type Object struct {
	// Kind is the object's kind: Node, CSINode, CSIDriver, StorageClass, PersistentVolume,
	// Pod (for an inline volume, with Volume set).
	Kind string `json:"kind"`
	// Namespace is set for namespaced objects.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// Volume is the pod's volume name, for a finding about one volume of a pod.
	Volume string `json:"volume,omitempty"`
}

// String renders the object as Kind/namespace/name[:volume], for text output.
func (o Object) String() string {
	s := o.Kind + "/"
	if o.Namespace != "" {
		s += o.Namespace + "/"
	}
	s += o.Name
	if o.Volume != "" {
		s += ":" + o.Volume
	}
	return s
}

// Finding is one thing that would block or change when the step is taken.
type Finding struct {
	// Severity is blocks or warns.
	Severity Severity `json:"severity"`
	// Check is the kind of finding.
	Check Check `json:"check"`
	// Plugin is the in-tree plugin whose step it is about.
	Plugin string `json:"plugin"`
	// Object is the object the finding is about.
	Object Object `json:"object"`
	// Node is the node concerned, when there is one.
	Node string `json:"node,omitempty"`
	// Why says what is wrong and what would happen; it quotes cluster data.
	Why string `json:"why"`
	// Fix says what to do before the step.
	Fix string `json:"fix"`
	// StorageClass is the class csi-translation-lib would give the CSI driver, for storageclass
	// findings whose translation succeeded.
	StorageClass *TranslatedClass `json:"translatedStorageClass,omitempty"`
}

// TranslatedClass is what csi-translation-lib turns an in-tree StorageClass into.
type TranslatedClass struct {
	// Provisioner is the CSI driver that provisions the class's volumes after migration.
	Provisioner string `json:"provisioner"`
	// Parameters are the translated parameters.
	Parameters map[string]string `json:"parameters"`
	// AllowedTopologies are the translated topology terms, one "key in (v1, v2)" expression
	// string per requirement, terms ORed.
	AllowedTopologies []string `json:"allowedTopologies,omitempty"`
}

// Step is one plugin's move.
type Step struct {
	// Plugin is the in-tree plugin.
	Plugin string `json:"plugin"`
	// Driver is the CSI driver that replaces it.
	Driver string `json:"driver"`
	// From is its mode now (from --migration).
	From migration.Mode `json:"from"`
	// To is the mode checked.
	To migration.Mode `json:"to"`
}

// Report is the result of a preflight. The JSON field names are a public contract
// (`adc preflight -o json`, /api/v1/preflight).
type Report struct {
	// GeneratedAt is when the cluster was read.
	GeneratedAt time.Time `json:"generatedAt"`
	// Config is the controller configuration the step starts from, as
	// migration.Config.String renders it.
	Config string `json:"config"`
	// Steps are the plugins' moves, sorted by plugin.
	Steps []Step `json:"steps"`
	// NodesManaged counts the nodes whose volumes adc manages; only they are checked.
	NodesManaged int `json:"nodesManaged"`
	// Findings are sorted: blocking first, then by plugin, check, object.
	Findings []Finding `json:"findings"`
	// Blocking and Warnings count the findings by severity.
	Blocking int `json:"blocking"`
	Warnings int `json:"warnings"`
	// OK is true when nothing blocks: `adc preflight` exits 0 only then.
	OK bool `json:"ok"`
}

// finish sorts the findings and fills the counts.
func (r *Report) finish() {
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	rank := map[Check]int{}
	for i, c := range Checks {
		rank[c] = i
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := &r.Findings[i], &r.Findings[j]
		if a.Severity != b.Severity {
			return a.Severity == Blocks
		}
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		if a.Check != b.Check {
			return rank[a.Check] < rank[b.Check]
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Object.String() < b.Object.String()
	})
	r.Blocking, r.Warnings = 0, 0
	for i := range r.Findings {
		if r.Findings[i].Severity == Blocks {
			r.Blocking++
		} else {
			r.Warnings++
		}
	}
	r.OK = r.Blocking == 0
}
