package scenario

import (
	"context"
	"fmt"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/test/simulator"
)

// Calibration is the write rate a scenario's control plane sustains for the controller's
// user at the controller's client budget, measured the way the runs are: a control plane on
// a fresh copy of the same seeded cluster, the same audit log, the same harness watches and
// the same simulated external-attacher (which writes the status of every object created, as
// in a run). A burst of VolumeAttachment creates (objects of the size a controller creates,
// for the cluster's own nodes and volumes) is sent as fast as the client budget lets,
// CalibrationInFlight at once, so that the API server, not the sender, sets the pace.
type Calibration struct {
	Scenario string
	// Creates is how many VolumeAttachments were created; InFlight how many were sent at once.
	Creates, InFlight int
	// AllCreated is from the first create sent until the harness's watch saw the last one;
	// AllAttached until the simulated attacher had marked every one attached, and
	// AttachedP50 until the harness's watch saw half of them attached.
	AllCreated, AllAttached, AttachedP50 time.Duration
	// Rate is Creates / AllCreated: writes per second this control plane sustains.
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
)

// Calibrate measures the write rate of c's control plane (see Calibration).
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
	fmt.Fprintf(c.Progress, "calibrating: %d VolumeAttachment creates, %d at once, at %g/%d QPS\n", n, CalibrationInFlight, c.QPS, c.Burst)
	start := time.Now()
	p := newPool(ctx, CalibrationInFlight)
	for i := 0; i < n; i++ {
		node := nodeName(i / c.PodsPerNode)
		pv := "pv-" + podName(node, i%c.PodsPerNode)
		va := &storagev1.VolumeAttachment{
			// As long as the names controllers give (csi- and a SHA-256 in hex).
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("csi-%064x", i)},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: Driver, NodeName: node,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		}
		p.do(func() error {
			if _, err := client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("calibration create %s: %w", va.Name, err)
			}
			return nil
		})
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, c, start, nil, func(created, _, _ int) bool { return created >= n },
		func(created, _, _ int) string { return fmt.Sprintf("%d/%d calibration creates seen", created, n) }, w); err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	k := &Calibration{Scenario: c.Name(), Creates: n, InFlight: CalibrationInFlight}
	k.AllCreated = w.lastCreated().Sub(start)
	for att.Attached() < int64(n) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // polling the attacher's counter
		}
	}
	k.AllAttached = time.Since(start)
	k.AttachedP50 = w.attachedPercentile(start, 50)
	k.Rate = float64(n) / k.AllCreated.Seconds()
	k.Load = loadAverage()
	fmt.Fprintf(c.Progress, "  calibrated: %d creates in %.2fs (%.0f writes/s), all attached after %.2fs (half after %.2fs); load average %.1f\n",
		n, k.AllCreated.Seconds(), k.Rate, k.AllAttached.Seconds(), k.AttachedP50.Seconds(), k.Load)
	return k, nil
}
