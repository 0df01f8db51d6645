package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// Row is one decision in the report. The JSON field names are a public contract (dashboards
// and scripts parse `adc plan -o json`); do not rename them.
type Row struct {
	// Pod is "<namespace>/<name>".
	Pod string `json:"pod"`
	// Volume is the pod's name for the volume (spec.volumes[].name).
	Volume string `json:"volume"`
	// PV is the bound PersistentVolume, or empty for inline volumes and unresolved claims.
	PV string `json:"pv"`
	// Node is the node the pod is scheduled to.
	Node string `json:"node"`
	// Plugin is the in-tree plugin name, or kubernetes.io/csi for native CSI volumes.
	Plugin string `json:"plugin"`
	// Driver is the CSI driver the volume resolves to, or empty.
	Driver string `json:"driver"`
	// VolumeHandle is the (translated) CSI volume handle, or empty.
	VolumeHandle string `json:"volumeHandle"`
	// UniqueName is the name the kubelet expects in Node status.volumesAttached, or empty.
	UniqueName string `json:"uniqueName"`
	// Mechanism is one of the six mechanisms of migration.Mechanisms.
	Mechanism migration.Mechanism `json:"mechanism"`
	// Reason says why, or what the operator should do.
	Reason string `json:"reason"`
	// VolumeAttachment is the VolumeAttachment name for mechanism csi, else empty.
	VolumeAttachment string `json:"volumeAttachment"`
	// Notes are non-fatal observations (e.g. unknown names in a CSINode annotation). They
	// are shown by the table renderer and deliberately left out of the JSON contract.
	Notes []string `json:"-"`
}

// Report is the result of a plan: the rows sorted by node, pod and volume, and a count per
// mechanism.
type Report struct {
	// Decisions is never nil, so the JSON always has a "decisions" array.
	Decisions []Row `json:"decisions"`
	// Summary counts rows per mechanism and always holds all six mechanisms, zeros included,
	// so consumers can read any key without checking for its presence.
	Summary map[migration.Mechanism]int `json:"summary"`
	// NodeLoss lists the volumes node status shows attached to managed nodes that are not
	// Ready, with what their detach rule (a DetachPolicy or the built-in rule) will do;
	// absent when every node is Ready.
	NodeLoss []NodeLossVolume `json:"nodeLoss,omitempty"`
}

// FromObjects assembles a report from already-listed objects. It is pure and deterministic:
// Build calls it after listing, and tests call it directly.
func FromObjects(cfg migration.Config, pods []v1.Pod, objs migration.Objects) Report {
	idx := migration.NewObjectIndex(objs)
	rows := []Row{}
	for i := range pods {
		pod := &pods[i]
		if !migration.PodIsActive(pod) {
			continue
		}
		node := idx.NodeObjects(pod.Spec.NodeName)
		for _, dv := range migration.DecidePod(&cfg, &pod.ObjectMeta, pod.Spec.Volumes, node, idx) {
			pv, d := dv.PodVolume, dv.Decision
			rows = append(rows, Row{
				Pod:              pod.Namespace + "/" + pod.Name,
				Volume:           pv.Name,
				PV:               pv.PVName,
				Node:             pod.Spec.NodeName,
				Plugin:           d.Plugin,
				Driver:           d.Driver,
				VolumeHandle:     d.VolumeHandle,
				UniqueName:       d.UniqueName,
				Mechanism:        d.Mechanism,
				Reason:           d.Reason,
				VolumeAttachment: d.VolumeAttachmentName,
				Notes:            d.Notes,
			})
		}
	}
	return NewReport(rows)
}

// NewReport sorts rows by node, pod and volume and computes the summary. Renderers expect a
// Report built this way.
func NewReport(rows []Row) Report {
	if rows == nil {
		rows = []Row{}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Volume < b.Volume
	})
	summary := make(map[migration.Mechanism]int, len(migration.Mechanisms))
	for _, m := range migration.Mechanisms {
		summary[m] = 0
	}
	for i := range rows {
		summary[rows[i].Mechanism]++
	}
	return Report{Decisions: rows, Summary: summary}
}
