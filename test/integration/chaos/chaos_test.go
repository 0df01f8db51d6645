package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/test/faultproxy"
	"github.com/migration-aware/adc/test/simulator"
)

// Scale of a chaos run: small enough for two shared cores, big enough that every node has
// several volumes coming and going.
const (
	chaosNodes   = 12
	chaosVolumes = 120
	chaosPVLess  = 12 // of chaosVolumes, those of spareDriver whose PersistentVolumes the churn deletes
	chaosInline  = 24 // inline gce-pd volumes, attached through the migrated CSI driver
	chaosNS      = "chaos"
	maxWait      = 5 * time.Second // adc's --max-wait-for-unmount
	// settleTimeout bounds convergence after the last fault. Every watcher here (adc, the
	// simulated kubelets and attacher) relists after an API server restart through
	// client-go's reflector backoff, which grows to 30 s, doubled by its jitter, until two
	// minutes pass without an error: a watcher can be a minute late with nothing wrong.
	// A leaked attachment never converges; the time it took is logged either way.
	settleTimeout = 2 * time.Minute
	// catchUpTimeout bounds the last etcd catch-up tried when none succeeded within
	// settleTimeout: without one, convergence cannot be judged and the run fails.
	catchUpTimeout = time.Minute
)

// TestChaos runs adc (the binary, two replicas with leader election) against simulated
// kubelets, a simulated external-attacher with the real one's finalizer, pod churn and
// faults, and fails on any breach of the safety rules the etcd-reading checker finds.
func TestChaos(t *testing.T) {
	if adcBuildErr != nil {
		t.Fatal(adcBuildErr)
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("chaos seed %d (replay with CHAOS_SEED=%d), duration %s (CHAOS_DURATION)", seed, seed, *chaosDuration)
	began := time.Now()
	rnd := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), klog.Background().WithName("chaos")))
	defer cancel()

	cp := startControlPlane(t)
	checker, feed := startChecker(t, cp, maxWait)
	createVolumes(ctx, t, cp, chaosNS, chaosVolumes)

	// Every node migrated gce-pd (its CSINode says so), so the inline gce-pd volumes are
	// attached through pd.csi.storage.gke.io: adc here has no in-tree attacher.
	kubelets := &simulator.SimulatedKubelets{Client: cp.Client, Seed: uint64(seed),
		MigratedPlugins: "kubernetes.io/gce-pd", CSIDrivers: []string{driver, spareDriver, gceDriver}}
	if err := kubelets.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < chaosNodes; i++ {
		names = append(names, fmt.Sprintf("n-%02d", i))
		if err := kubelets.AddNode(ctx, names[i]); err != nil {
			t.Fatal(err)
		}
	}
	attacher := flakyAttacher(cp.Client, newAttacherFaults(uint64(seed)))
	if err := attacher.Run(ctx); err != nil {
		t.Fatal(err)
	}

	// adc talks to the API server through a fault proxy, as a client far from it would: its
	// Node watch can lag behind its Pod and VolumeAttachment watches (the window of the
	// incident this test was written for); every other actor talks to the API server directly.
	proxy, err := faultproxy.New(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = proxy.Close() }()
	reps, stopReps := startLeading(ctx, t, cp.Client, proxy.Config())
	defer stopReps()

	fl := newFleet(names)
	ch := newChurn(cp.Client, chaosNS, chaosVolumes, chaosInline, fl, rnd.Uint64())
	ch.Populate(ctx, 0.6)
	t.Logf("set up in %s: %d nodes, %d volumes, adc leading", time.Since(began).Round(time.Millisecond), chaosNodes, chaosVolumes)

	chaosCtx, stopChaos := context.WithCancel(ctx)
	churnDone := make(chan struct{})
	go func() { defer close(churnDone); ch.Run(chaosCtx, 100*time.Millisecond) }()
	f := &faults{t: t, cp: cp, feed: feed, proxy: proxy, kubelets: kubelets, churn: ch, fleet: fl, replicas: reps, maxWait: maxWait, rnd: rand.New(rand.NewPCG(rnd.Uint64(), 1))}
	faultErr := f.Run(chaosCtx, time.Now().Add(*chaosDuration))
	stopChaos()
	<-churnDone
	if err := ch.RestoreAll(ctx); err != nil {
		t.Errorf("after the chaos phase: %v", err)
	}
	created, deleted, pvDeleted, pvRecreated := ch.Stats()
	started, killed := reps.Stats()
	t.Logf("chaos phase over after %s: faults %v; pods created %d, deleted %d; PersistentVolumes deleted under their VolumeAttachments %d, created again %d; adc processes %d, leaders killed %d; attaches %d, detaches %d; kubelet volumesInUse patches %d",
		time.Since(began).Round(time.Millisecond), f.Injected(), created, deleted, pvDeleted, pvRecreated, started, killed, attacher.Attached(), attacher.Detached(), kubelets.Patches())
	if faultErr != nil {
		t.Errorf("injecting faults: %v", faultErr)
	}

	converged := time.Now()
	var problems []Violation
	var catchUpErr error
	judged := false // whether any convergence check ran on a checker caught up with etcd
	settleErr := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, settleTimeout, true, func(ctx context.Context) (bool, error) {
		// A slow etcd read (a loaded machine) is no verdict: try again until the deadline.
		if _, err := feed.CatchUp(ctx, 10*time.Second); err != nil {
			catchUpErr = err
			return false, nil
		}
		judged = true
		problems = checker.Convergence()
		return len(problems) == 0, nil
	})
	if !judged {
		// The checker never caught up with etcd: no convergence check ran, so problems is
		// empty for want of a verdict, not because adc converged. One more, longer try; a run
		// whose convergence is never judged fails.
		if _, err := feed.CatchUp(ctx, catchUpTimeout); err != nil {
			t.Errorf("convergence not judged: the checker did not catch up with etcd within %s of the last fault (last error: %v; a final %s try: %v)",
				settleTimeout, catchUpErr, catchUpTimeout, err)
		} else {
			problems = checker.Convergence()
			if len(problems) == 0 {
				settleErr = nil
			}
		}
	}
	pods, vas := checker.Size()
	checker.RecordConvergence(pods+vas, problems)
	if settleErr != nil {
		t.Logf("not converged within %s of the last fault (%v; last etcd catch-up error: %v)", settleTimeout, settleErr, catchUpErr)
		describeDeleting(t, cp, attacher)
		explainStuck(t, cp, reps, problems)
	} else {
		t.Logf("converged %s after the last fault: %d pods, %d VolumeAttachments", time.Since(converged).Round(time.Millisecond), pods, vas)
	}
	if err := feed.Err(); err != nil {
		t.Fatalf("the checker missed changes, its verdict is void: %v", err)
	}

	violations := reportViolations(t, checker, feed)
	explain(t, violations, reps)
	if settleErr != nil {
		dumpLeaderStacks(t, reps)
	}
	if dir := os.Getenv("CHAOS_LOG_DIR"); dir != "" {
		reps.SaveLogs(t, dir)
	}
	t.Logf("chaos run took %s (seed %d)", time.Since(began).Round(time.Millisecond), seed)
}

// explain fails the test with up to five examples per invariant and the adc log lines about
// the first of them.
func explain(t *testing.T, violations []Violation, reps *replicas) {
	t.Helper()
	if len(violations) == 0 {
		return
	}
	shown := map[string]int{}
	for _, v := range violations {
		if shown[v.Invariant]++; shown[v.Invariant] <= 5 {
			t.Errorf("%s", v)
		}
	}
	for inv, n := range shown {
		if n > 5 {
			t.Errorf("%s: %d more", inv, n-5)
		}
	}
	first := violations[0]
	var words []string
	if f := strings.Fields(first.Message); len(f) > 1 && f[0] == "VA" {
		words = append(words, f[1])
	}
	if f := strings.Fields(first.Message); len(f) > 1 && f[0] == "pod" {
		// A convergence problem: "pod NAMESPACE/NAME on NODE: no VA NAME for VOLUME".
		_, pod, _ := strings.Cut(f[1], "/")
		words = append(words, pod)
		if i := slices.Index(f, "VA"); i >= 0 && i+1 < len(f) {
			words = append(words, f[i+1])
		}
	}
	if i := strings.Index(first.Message, "("); i >= 0 {
		if f := strings.Fields(first.Message[i+1:]); len(f) > 0 {
			words = append(words, `"`+f[0]+`"`, "="+f[0]+" ", "h-"+strings.TrimPrefix(f[0], "v-"))
		}
	}
	if lines := reps.LogLinesAbout(words, 40); len(lines) > 0 {
		t.Logf("adc log lines about the first violation (%v):\n%s", words, strings.Join(lines, "\n"))
	}
}
