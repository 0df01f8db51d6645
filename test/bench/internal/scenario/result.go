package scenario

import (
	"time"

	"github.com/migration-aware/adc/test/bench/internal/auditcount"
)

// Result is what one run measured. Durations of the attach phase count from the
// controller's start (process start, so start-up and informer lists are included).
type Result struct {
	Scenario    string
	Controller  Kind
	Nodes       int
	PodsPerNode int
	Volumes     int
	QPS         float64
	Burst       int

	// Seeding is how long seeding took, zero when a cached seed was reused.
	Seeding time.Duration

	// FirstVolumeAttachment: until the first VolumeAttachment was first seen, the
	// controller's start (process, informers, first decision) before its creates;
	// AllVolumeAttachments: until the last one was.
	FirstVolumeAttachment, AllVolumeAttachments time.Duration
	// AllAttached and AttachedP50: until the last VolumeAttachment (half of them) was first
	// seen attached (the attacher's part ends there; AllListed - AllAttached is the
	// controller's tail).
	AllAttached, AttachedP50 time.Duration
	// AllListed: until the last volume was first listed in its node's status.volumesAttached.
	AllListed time.Duration
	// ListedP50 and ListedP90: over volumes, the time until each was first listed.
	ListedP50, ListedP90 time.Duration
	// AttachedToListedP50 and P99: over volumes, from the harness seeing the VolumeAttachment's
	// status.attached turn true to it seeing the volume listed in the Node's status.
	AttachedToListedP50, AttachedToListedP99 time.Duration
	// APIBudget is the attach phase's required writes (one create per volume, one status
	// write per node) divided by QPS: no controller can be faster at that QPS.
	APIBudget time.Duration

	// ProcessMeasured is false when the controller ran in the harness's process.
	ProcessMeasured bool
	// MaxRSS is the controller process's VmHWM at the end of the run; MaxRSSAttach at
	// convergence. Bytes.
	MaxRSS, MaxRSSAttach int64
	// CPUAttach is the controller's utime+stime from its start to convergence; CPUDetach
	// during the detach phase.
	CPUAttach, CPUDetach time.Duration

	// Attach, Steady and Detach are the controller's API requests in each phase.
	Attach, Steady, Detach auditcount.Counts
	// Errors counts the controller's API responses of 400 or more over the whole run, by
	// code; LogErrors the error lines (klog "E...") in its log until it was asked to stop.
	Errors map[int]int64
	// ErrorsByRequest counts them by "code verb resource".
	ErrorsByRequest map[string]int64
	LogErrors       int
	// Log is where the controller's log is, if kept.
	Log string

	// AllDetached: from the start of the pods' deletion until every VolumeAttachment is gone.
	AllDetached time.Duration

	// LoadStart and LoadConverged are the machine's 1-minute load average when the controller
	// started and when it converged: the runs share two cores with whatever else runs.
	LoadStart, LoadConverged float64

	// Calibration is the write rate of the scenario's control plane, measured in the same
	// benchmark run (Calibrate); nil when not calibrated.
	Calibration *Calibration `json:",omitempty"`
}

// WritesNeeded is the least any controller must write to attach everything: one
// VolumeAttachment create per volume and one status write per node.
func (r *Result) WritesNeeded() int { return r.Volumes + r.Nodes }

// IdealAllListed is WritesNeeded at the calibrated write rate: the soonest every volume can
// be listed on this control plane. Zero without a calibration.
func (r *Result) IdealAllListed() time.Duration { return r.Calibration.IdealFor(r.WritesNeeded()) }

// BestAllListed is the calibration's best case (bestCase): the soonest every volume can be
// listed on this control plane with this attacher. Zero without a calibration of every
// volume.
func (r *Result) BestAllListed() time.Duration {
	if r.Calibration == nil {
		return 0
	}
	return r.Calibration.BestAllListed
}

// BestListedP50 is BestAllListed for half the volumes.
func (r *Result) BestListedP50() time.Duration {
	if r.Calibration == nil {
		return 0
	}
	return r.Calibration.BestListedP50
}

// IdealP50 is the soonest half the volumes can be listed: half the writes, nodes finished
// one after another.
func (r *Result) IdealP50() time.Duration { return r.IdealAllListed() / 2 }

// IdealAllCreated is the soonest every VolumeAttachment can exist: one create per volume.
func (r *Result) IdealAllCreated() time.Duration { return r.Calibration.IdealFor(r.Volumes) }

// Efficiency is ideal / measured (1: at the control plane's limit); false without a
// calibration or a measured figure.
func Efficiency(ideal, measured time.Duration) (float64, bool) {
	if ideal <= 0 || measured <= 0 {
		return 0, false
	}
	return ideal.Seconds() / measured.Seconds(), true
}

// RSSPerVolumeKiB is the peak RSS of the whole process divided by the volumes.
func (r *Result) RSSPerVolumeKiB() float64 {
	return float64(r.MaxRSS) / 1024 / float64(r.Volumes)
}

// CPUPer1000Attaches is the CPU seconds to convergence per 1000 attaches.
func (r *Result) CPUPer1000Attaches() float64 {
	return r.CPUAttach.Seconds() * 1000 / float64(r.Volumes)
}

// WritesPerAttach is the attach phase's writes per volume.
func (r *Result) WritesPerAttach() float64 {
	return float64(r.Attach.Writes()) / float64(r.Volumes)
}

// PerVolume divides counts by the volumes.
func (r *Result) PerVolume(n int64) float64 { return float64(n) / float64(r.Volumes) }
