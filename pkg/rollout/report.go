package rollout

import (
	"time"

	"github.com/migration-aware/adc/pkg/migration"
)

// Source says where a Report's numbers come from. The values are part of the JSON API.
type Source string

const (
	// SourceController: the running controller's state (what it decided and did).
	SourceController Source = "controller"
	// SourceCluster: computed from the cluster's objects without a controller (`adc status`),
	// so retries, next-retry times and recent operations are not known.
	SourceCluster Source = "cluster"
)

// ProblemKind names a problem that needs an operator. The values are part of the JSON API.
type ProblemKind string

const (
	// ProblemVersionSkew: a node reports a plugin migrated while adc has its migration off.
	ProblemVersionSkew ProblemKind = "version-skew"
	// ProblemMultiAttach: a ReadWriteOnce volume waits because it is attached to another node.
	ProblemMultiAttach ProblemKind = "multi-attach"
)

// MaxOperations bounds Report.Operations, so the page and the JSON stay small however busy
// the controller is.
const MaxOperations = 50

// Report is the rollout summary shared by the dashboard, the JSON API and `adc status`. The
// JSON field names are a public contract (docs/rollout-api.md); do not rename them.
type Report struct {
	// GeneratedAt is when the report was computed.
	GeneratedAt time.Time `json:"generatedAt"`
	// Source is controller or cluster.
	Source Source `json:"source"`
	// Standby is true when this replica does not lead, so it has no controller state; every
	// list is then empty and Message says so.
	Standby bool `json:"standby"`
	// Message is a human sentence about the report as a whole (standby), or empty.
	Message string `json:"message"`
	// NodeSource is where node migration state is read from (csinode, csinodeinfo, auto).
	NodeSource migration.NodeSource `json:"nodeSource"`
	// NodesManaged counts the nodes with the controller-managed-attach-detach annotation; only
	// they count anywhere in the report.
	NodesManaged int `json:"nodesManaged"`
	// Plugins has one entry per migratable in-tree plugin, sorted by plugin name.
	Plugins []PluginRollout `json:"plugins"`
	// VolumesByMechanism counts the (pod volume, node) pairs per mechanism; all six
	// mechanisms are present, zeros included.
	VolumesByMechanism map[migration.Mechanism]int `json:"volumesByMechanism"`
	// Held lists the pairs that are held (wait, error, or in-tree without an attacher).
	Held []HeldPair `json:"held"`
	// Problems lists version skew and multi-attach blocks.
	Problems []Problem `json:"problems"`
	// Notes are non-fatal observations about nodes, such as unknown plugin names in a CSINode
	// annotation.
	Notes []NodeNote `json:"notes"`
	// Operations are the most recent finished attach and detach operations, newest first, at
	// most MaxOperations; always empty for source cluster.
	Operations []OperationRecord `json:"operations"`
	// UnderWay are the attaches and detaches requested and not ended yet, oldest first, at
	// most MaxOperations (Time is when each was requested); always empty for source cluster.
	UnderWay []OperationRecord `json:"underWay"`
	// RecentFlips are the last managed nodes that reported an in-tree plugin migrated or no
	// longer migrated, newest first, at most MaxFlips; always empty for source cluster (a
	// flip is seen as it happens, by a running controller).
	RecentFlips []FlipRecord `json:"recentFlips"`
	// NodeLoss lists the volumes of managed nodes that are not Ready with what their detach
	// rule (a DetachPolicy or the built-in rule) will do: detach now on evidence, at a time,
	// or hold them.
	NodeLoss []NodeLossVolume `json:"nodeLoss"`
	// OtherController is set once the leader has seen another attach/detach controller
	// write what adc owns; while it is Fenced, adc writes nothing.
	OtherController *OtherController `json:"otherController,omitempty"`
	// Nodes are the node view's rows, one per managed node sorted by name. They are not
	// part of /dashboard/api/v1/rollout (a large cluster would bloat it): NodesView serves them.
	Nodes []NodeRollout `json:"-"`
}

// PluginRollout is the rollout state of one in-tree plugin across the managed nodes.
type PluginRollout struct {
	// Plugin is the in-tree plugin name, e.g. kubernetes.io/gce-pd.
	Plugin string `json:"plugin"`
	// Driver is the CSI driver that replaces it (from k8s.io/csi-translation-lib).
	Driver string `json:"driver"`
	// Mode is adc's migration mode for the plugin: off, on or complete.
	Mode migration.Mode `json:"mode"`
	// NodesMigrated, NodesNotMigrated and NodesUnknown count managed nodes by what they
	// report for the plugin; they add up to NodesTotal.
	NodesMigrated    int `json:"nodesMigrated"`
	NodesNotMigrated int `json:"nodesNotMigrated"`
	NodesUnknown     int `json:"nodesUnknown"`
	NodesTotal       int `json:"nodesTotal"`
	// VolumesByPath counts the plugin's pairs by path (CSI, in-tree, held): where the data
	// is, which node counts hide.
	VolumesByPath VolumePaths `json:"volumesByPath"`
	// Readiness says whether switching the plugin to complete is safe now and what blocks
	// it; for a plugin already complete, its node list is the kubelets that lag (skew).
	Readiness Readiness `json:"readiness"`
}

// HeldPair is a (pod volume, node) pair adc neither attaches nor detaches until its cause
// is fixed or the retry succeeds.
type HeldPair struct {
	// Node, Pod ("namespace/name") and Volume (the pod's volume name) identify the pair, so
	// an operator can find the pod and the Events adc posted on it.
	Node   string `json:"node"`
	Pod    string `json:"pod"`
	Volume string `json:"volume"`
	// PV is the bound PersistentVolume, or empty (inline volume, unresolved claim).
	PV string `json:"pv"`
	// Plugin is the volume plugin (kubernetes.io/gce-pd, kubernetes.io/csi, ...), or empty.
	Plugin string `json:"plugin"`
	// Mechanism is wait, error, or in-tree (an in-tree volume and no in-tree attacher).
	Mechanism migration.Mechanism `json:"mechanism"`
	// Reason says why and what to do; it quotes cluster data and is shown escaped.
	Reason string `json:"reason"`
	// Retries is how many times the pair was retried with backoff (0 for source cluster).
	Retries int `json:"retries"`
	// NextRetry is when the controller retries next; null when unknown.
	NextRetry *time.Time `json:"nextRetry"`
	// Since is when the pair entered its current state; null when unknown.
	Since *time.Time `json:"since"`
}

// Problem is a pair that needs an operator's decision.
type Problem struct {
	// Kind is version-skew or multi-attach.
	Kind ProblemKind `json:"kind"`
	// Node, Pod and Volume identify the pair, as in HeldPair.
	Node   string `json:"node"`
	Pod    string `json:"pod"`
	Volume string `json:"volume"`
	// Reason explains the problem and what to do; it quotes cluster data.
	Reason string `json:"reason"`
}

// NodeNote is a non-fatal observation about one node's migration objects.
type NodeNote struct {
	// Node is the node the note is about.
	Node string `json:"node"`
	// Message is the observation; it quotes cluster data (the annotation value).
	Message string `json:"message"`
}

// MaxFlips bounds Report.RecentFlips.
const MaxFlips = 50

// FlipRecord is a node reporting an in-tree plugin migrated (its kubelet now expects the
// CSI driver) or no longer migrated (a rollback).
type FlipRecord struct {
	// Time is when adc saw the node's new report.
	Time time.Time `json:"time"`
	// Node is the node's name.
	Node string `json:"node"`
	// Plugin is the in-tree plugin, e.g. kubernetes.io/gce-pd.
	Plugin string `json:"plugin"`
	// Migrated is the new state: true for migrated, false for no longer migrated.
	Migrated bool `json:"migrated"`
}

// OperationRecord is one finished attach or detach.
type OperationRecord struct {
	// Kind is attach or detach.
	Kind string `json:"kind"`
	// Node is the node the volume was attached to or detached from.
	Node string `json:"node"`
	// Volume is the unique volume name (or the VolumeAttachment name when unknown).
	Volume string `json:"volume"`
	// Plugin is the volume_plugin of the operation metrics (in-tree plugin name, or
	// kubernetes.io/csi:<driver> for native CSI volumes).
	Plugin string `json:"plugin"`
	// Migrated is true for an in-tree volume attached through its CSI driver.
	Migrated bool `json:"migrated"`
	// DurationSeconds is how long the operation took.
	DurationSeconds float64 `json:"durationSeconds"`
	// Error is the failure message, empty on success.
	Error string `json:"error"`
	// Time is when the operation finished.
	Time time.Time `json:"time"`
}

// withLists returns r with every nil list made empty and every mechanism present, so the JSON
// of any report, even a zero one, has the documented shape.
func (r Report) withLists() Report {
	if r.Plugins == nil {
		r.Plugins = []PluginRollout{}
	}
	plugins := make([]PluginRollout, len(r.Plugins))
	for i, p := range r.Plugins {
		if p.Readiness.NodesNotMigrated == nil {
			p.Readiness.NodesNotMigrated = []NodeBlocker{}
		}
		if p.Readiness.VolumesChangingPath == nil {
			p.Readiness.VolumesChangingPath = []PathChange{}
		}
		plugins[i] = p
	}
	r.Plugins = plugins
	if r.Held == nil {
		r.Held = []HeldPair{}
	}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	if r.Notes == nil {
		r.Notes = []NodeNote{}
	}
	if r.UnderWay == nil {
		r.UnderWay = []OperationRecord{}
	}
	if r.Operations == nil {
		r.Operations = []OperationRecord{}
	}
	if r.RecentFlips == nil {
		r.RecentFlips = []FlipRecord{}
	}
	byMech := make(map[migration.Mechanism]int, len(migration.Mechanisms))
	for _, m := range migration.Mechanisms {
		byMech[m] = r.VolumesByMechanism[m]
	}
	r.VolumesByMechanism = byMech
	return r
}

// newReport returns a report with every list non-nil and every mechanism counted, so the
// JSON always has the same keys.
func newReport(source Source, cfg migration.Config, now time.Time) Report {
	byMech := make(map[migration.Mechanism]int, len(migration.Mechanisms))
	for _, m := range migration.Mechanisms {
		byMech[m] = 0
	}
	src := cfg.NodeSource
	if src == "" {
		src = migration.NodeSourceCSINode
	}
	return Report{
		GeneratedAt:        now,
		Source:             source,
		NodeSource:         src,
		Plugins:            []PluginRollout{},
		VolumesByMechanism: byMech,
		Held:               []HeldPair{},
		Problems:           []Problem{},
		Notes:              []NodeNote{},
		Operations:         []OperationRecord{},
		UnderWay:           []OperationRecord{},
		RecentFlips:        []FlipRecord{},
		NodeLoss:           []NodeLossVolume{},
	}
}

// Standby is the report of a replica that does not lead: no controller state, a message
// saying so, and the configured modes so the page still shows what this replica would do.
func Standby(cfg migration.Config, now time.Time) Report {
	r := newReport(SourceController, cfg, now)
	r.Standby = true
	r.Message = "standby: this replica does not hold the leader election lease; the leading replica's dashboard shows the rollout"
	r.Plugins = pluginRollouts(cfg, nil)
	tallyPlugins(r.Plugins, nil, nil)
	for i := range r.Plugins {
		r.Plugins[i].Readiness.Ready = false // a standby knows nothing about the nodes
	}
	return r
}
