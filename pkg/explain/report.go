package explain

import (
	"time"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

// Report explains a target: for each volume of each pod concerned, the whole chain as adc
// sees it. The JSON field names are a public contract (`adc explain -o json`,
// /api/v1/explain).
type Report struct {
	// GeneratedAt is when the cluster was read.
	GeneratedAt time.Time `json:"generatedAt"`
	// Target is what is explained.
	Target Target `json:"target"`
	// Config is the migration configuration the decisions were made with.
	Config string `json:"config"`
	// MaxWaitForUnmount is the controller's --max-wait-for-unmount the forced-detach times
	// are computed with.
	MaxWaitForUnmount string `json:"maxWaitForUnmount"`
	// Controller says whose memory the report carries, when a controller was asked.
	Controller *ControllerSource `json:"controller,omitempty"`
	// Pods are the pods concerned: the target pod, or the pods using the target volume.
	Pods []Pod `json:"pods"`
	// Attachments are, for a pv target, every node the volume is attached to.
	Attachments []Attachment `json:"attachments,omitempty"`
	// Notes are observations about the report as a whole.
	Notes []string `json:"notes,omitempty"`
}

// ControllerSource is the running controller a report asked for its memory.
type ControllerSource struct {
	// Address is the controller's HTTP address, or "in-process" on its own dashboard.
	Address string `json:"address"`
	// Standby is true when the replica does not lead: it has no memory to show.
	Standby bool `json:"standby"`
	// Message is the controller's own note (e.g. on a standby).
	Message string `json:"message,omitempty"`
	// NotExposed lists what the controller keeps in memory but does not expose, so the
	// report cannot show it.
	NotExposed []string `json:"notExposed"`
}

// Pod is one pod and its volumes.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Node is the node it is scheduled to, empty when it is not scheduled.
	Node string `json:"node"`
	// Phase is its status.phase.
	Phase string `json:"phase"`
	// Active is true when its volumes belong in adc's desired state (scheduled, not
	// terminated); Inactive says why not otherwise.
	Active   bool   `json:"active"`
	Inactive string `json:"inactive,omitempty"`
	// Volumes are its volumes in spec order.
	Volumes []Volume `json:"volumes"`
}

// Volume is the chain of one pod volume on the pod's node.
type Volume struct {
	// Name is the pod's name for the volume.
	Name string `json:"name"`
	// Claim is "namespace/name" of its claim, for claim-backed volumes.
	Claim string `json:"claim,omitempty"`
	// PV is the bound PersistentVolume.
	PV string `json:"pv,omitempty"`
	// Plugin, Driver and VolumeHandle are the decision's.
	Plugin       string `json:"plugin,omitempty"`
	Driver       string `json:"driver,omitempty"`
	VolumeHandle string `json:"volumeHandle,omitempty"`
	// Mechanism, WaitCause and Reason are adc's decision for the pair now.
	Mechanism migration.Mechanism   `json:"mechanism"`
	WaitCause migration.WaitCause   `json:"waitCause,omitempty"`
	Reason    string                `json:"reason"`
	Notes     []string              `json:"notes,omitempty"`
	DecidedBy []Fact                `json:"decidedBy"`
	Names     migration.VolumeNames `json:"names"`
	// MultiAttach is true when the volume may be attached to several nodes (RWX/ROX).
	MultiAttach bool `json:"multiAttach"`
	// Here is the volume's attachment to the pod's node (nil when it has none).
	Here *Attachment `json:"here"`
	// Elsewhere are its attachments to other nodes (for a ReadWriteOnce volume, the node
	// holding it).
	Elsewhere []Attachment `json:"elsewhere"`
	// Controller is what the running controller remembers about the pair, when asked.
	Controller *Memory `json:"controller,omitempty"`
	// Next says, in one sentence, what happens next and what it waits for.
	Next string `json:"next"`
}

// Fact is one object a decision read and what it said.
type Fact struct {
	// Object names it, e.g. `CSINode "node-1"` or `--migration`.
	Object string `json:"object"`
	// Says is what it said, e.g. `annotation ... lists kubernetes.io/gce-pd`.
	Says string `json:"says"`
}

// Attachment is the volume's attachment to one node, as the cluster shows it.
type Attachment struct {
	Node string `json:"node"`
	// VolumeAttachment is its name on the CSI path; Exists says whether the object exists.
	VolumeAttachment string `json:"volumeAttachment,omitempty"`
	Exists           bool   `json:"exists"`
	// Attached is the VolumeAttachment's status.attached.
	Attached bool `json:"attached"`
	// Created is when the VolumeAttachment was created: since when the node holds it.
	Created *time.Time `json:"created,omitempty"`
	// AttachError and DetachError are the external-attacher's errors, with their time.
	AttachError     string     `json:"attachError,omitempty"`
	AttachErrorTime *time.Time `json:"attachErrorTime,omitempty"`
	DetachError     string     `json:"detachError,omitempty"`
	// Deleting is true when the VolumeAttachment is being deleted (the detach is under way).
	Deleting bool `json:"deleting"`
	// ListedInStatus: the node's status.volumesAttached lists it (the kubelet may mount it).
	ListedInStatus bool `json:"listedInStatus"`
	// InUse: the kubelet reports it in status.volumesInUse (mounted).
	InUse bool `json:"inUse"`
	// UsedBy are the active pods on the node that use it ("namespace/name").
	UsedBy []string `json:"usedBy"`
	// Detach is set when no active pod on the node uses it: adc detaches it.
	Detach *Detach `json:"detach,omitempty"`
}

// Detach is what stands between an unneeded attachment and its detach.
type Detach struct {
	// Blocked says what blocks the detach now; empty when nothing does.
	Blocked string `json:"blocked,omitempty"`
	// ForcedAt is when adc force-detaches it anyway (not Ready for --max-wait-for-unmount,
	// or now when the node is out of service); nil when it never would.
	ForcedAt *time.Time `json:"forcedAt,omitempty"`
	// Why explains both in a sentence.
	Why string `json:"why"`
}

// Memory is what a running controller remembers about one pair.
type Memory struct {
	// Held is the controller's hold of the pair (reason, retries, next retry), or nil.
	Held *rollout.HeldPair `json:"held"`
	// Problems are the controller's problems on the pair (multi-attach, version skew).
	Problems []rollout.Problem `json:"problems"`
	// Operations are the controller's recent attach and detach operations of the volume on
	// any node, newest first.
	Operations []rollout.OperationRecord `json:"operations"`
	// UnderWay are the controller's attaches and detaches of the volume requested and not
	// ended yet (Time is when each was requested).
	UnderWay []rollout.OperationRecord `json:"underWay"`
}
