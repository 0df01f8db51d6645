package scenario

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/simulator"
)

// Calibration is the write rate a scenario's control plane sustains for the controller's
// user at the controller's client budget, and the best case any controller can reach on it,
// measured the way the runs are: a control plane on a fresh copy of the same seeded cluster,
// the same audit log, the same harness watches and the same simulated external-attacher
// (which writes the status of every object created, as in a run). The harness's best case
// (bestCase) lists the cluster, sends every VolumeAttachment create as fast as the client
// budget lets, CalibrationInFlight at once, so that the API server, not the sender, sets the
// pace, and writes each node's status once when its volumes are attached.
type Calibration struct {
	Scenario string
	// Creates is how many VolumeAttachments were created; InFlight how many were sent at once.
	Creates, InFlight int
	// StatusWrites is how many node status writes the best case sent, one per node.
	StatusWrites int
	// Listing is how long the best case took to list pods, claims and PVs before its first
	// create. The times below count from the start of that listing, as a run's count from
	// the controller's start.
	Listing time.Duration
	// AllCreated is until the harness's watch saw the last VolumeAttachment; AllAttached
	// until the simulated attacher had marked every one attached, and AttachedP50 until the
	// harness's watch saw half of them attached.
	AllCreated, AllAttached, AttachedP50 time.Duration
	// BestAllListed and BestListedP50 are until the harness's watch saw every volume (half
	// of them) listed in its node's status: the soonest a controller can list them. Zero
	// when the calibration created fewer VolumeAttachments than the scenario has volumes.
	BestAllListed, BestListedP50 time.Duration
	// Rate is the writes that had returned when the last create was seen (creates and the
	// best case's status writes), per second from the first create: the writes per second
	// this control plane sustains.
	Rate float64
	// Load is the machine's 1-minute load average when the burst ended.
	Load float64
}

// IdealFor is how long writes take at the calibrated rate.
func (k *Calibration) IdealFor(writes int) time.Duration {
	if k == nil || k.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(writes) / k.Rate * float64(time.Second))
}

const (
	// CalibrationInFlight is how many creates the calibration sends at once: no fewer than
	// adc ever keeps in flight (100 at the benchmarks' 1000 QPS, 128 at most), so the control
	// plane is the limit.
	CalibrationInFlight = 128
	// maxCalibrationCreates bounds the burst at large sizes; the rate is per second anyway.
	maxCalibrationCreates = 10000
	// bestCaseStatusWorkers write node statuses at once in the best case.
	bestCaseStatusWorkers = 16
)

// Calibrate measures the write rate of c's control plane and the best case on it (see
// Calibration).
func Calibrate(ctx context.Context, c Config) (*Calibration, error) {
	c = c.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, err := startEnv(ctx, c)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	n := min(c.Volumes(), maxCalibrationCreates)
	w := newWatcher(n)
	w.start(ctx, e.admin)
	att := &simulator.ExternalAttacher{Client: e.admin, Workers: c.AttacherWorkers}
	if err := att.Run(ctx); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(e.user.Config())
	cfg.QPS, cfg.Burst = float32(c.QPS), c.Burst
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.UserAgent = "adc-bench-calibrate"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the calibration client: %w", err)
	}
	fmt.Fprintf(c.Progress, "calibrating: the best case of %d volumes, %d creates at once, at %g/%d QPS\n", n, CalibrationInFlight, c.QPS, c.Burst)
	start := time.Now()
	best, err := planBestCase(ctx, client, n)
	if err != nil {
		return nil, err
	}
	best.start(ctx, bestCaseStatusWorkers)
	k := &Calibration{Scenario: c.Name(), Creates: len(best.attachments), InFlight: CalibrationInFlight, StatusWrites: len(best.volumes)}
	k.Listing = time.Since(start)
	createStart := time.Now()
	p := newPool(ctx, CalibrationInFlight)
	writer := &volumeattach.ClientAttachmentWriter{Client: client}
	for _, va := range best.attachments {
		p.do(func() error {
			if _, err := writer.Create(ctx, va); err != nil {
				return fmt.Errorf("calibration: %w", err)
			}
			return nil
		})
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	progress := func(created, listed, _ int) string {
		return fmt.Sprintf("%d/%d calibration creates seen, %d listed", created, k.Creates, listed)
	}
	if err := waitFor(ctx, c, start, nil, func(created, _, _ int) bool { return created >= k.Creates }, progress, w); err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	lastCreated := w.lastCreated()
	k.AllCreated = lastCreated.Sub(start)
	k.Rate = float64(k.Creates+best.statusWritesBy(lastCreated)) / lastCreated.Sub(createStart).Seconds()
	if err := waitFor(ctx, c, start, nil, func(_, listed, _ int) bool { return listed >= k.Creates || best.failed() != nil }, progress, w); err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	if err := best.failed(); err != nil {
		return nil, err
	}
	var r Result
	w.attachResult(&r, start)
	k.AllAttached, k.AttachedP50 = r.AllAttached, r.AttachedP50
	if k.Creates == c.Volumes() {
		k.BestAllListed, k.BestListedP50 = r.AllListed, r.ListedP50
	}
	k.Load = loadAverage()
	fmt.Fprintf(c.Progress, "  calibrated: listed the cluster in %.2fs, %d creates in %.2fs (%.0f writes/s with %d status writes), all attached after %.2fs (half after %.2fs), all listed after %.2fs (half after %.2fs); load average %.1f\n",
		k.Listing.Seconds(), k.Creates, k.AllCreated.Seconds(), k.Rate, best.statusWritesBy(lastCreated), k.AllAttached.Seconds(), k.AttachedP50.Seconds(),
		k.BestAllListed.Seconds(), k.BestListedP50.Seconds(), k.Load)
	return k, nil
}
