package scenario

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/internal/auditlog"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/test/bench/internal/auditcount"
	"github.com/migration-aware/adc/test/bench/internal/procstat"
	"github.com/migration-aware/adc/test/simulator"
)

// FailoverResult is what a failover run measured: adc's new leader taking over a converged
// cluster after the leader was killed, then kube-controller-manager started on the same
// cluster.
type FailoverResult struct {
	Scenario string
	Volumes  int
	// Converge is how long the first adc leader took to converge the seeded cluster.
	Converge time.Duration
	ADC, KCM Takeover
}

// Takeover is one controller's start on a converged cluster. Times count from Start: the
// SIGKILL of adc's leader, or kube-controller-manager's process start. A canary pod (its own
// claim and PersistentVolume) is created at Start, so the controller has one decision to make.
type Takeover struct {
	Controller Kind
	// Leading is when the new leader took the Lease (adc; zero for kube-controller-manager,
	// run without leader election as in the other benchmarks).
	Leading time.Duration
	// Ready is when its caches synced and it started deciding: adc's "Caches synced" log line
	// (its /readyz passes from then on); kube-controller-manager's last "Caches are synced".
	Ready time.Duration
	// FirstDecision is when the canary's VolumeAttachment appeared; CanaryListed when the
	// canary volume was listed in its node's status.
	FirstDecision, CanaryListed time.Duration
	// Requests are the controller's API requests from Start until Window after CanaryListed.
	Requests auditcount.Counts
	// CanaryWrites are the writes the canary needs (its create, its node's status write);
	// OtherWrites every other write but the Lease's (leader election renews it every period).
	CanaryWrites, LeaseWrites, OtherWrites int64
	// OtherWriteRequests lists OtherWrites by "verb resource".
	OtherWriteRequests map[string]int64
	// MaxRSS is the process's VmHWM at the end of the window (its start included); CPU its
	// CPU time until then.
	MaxRSS int64
	CPU    time.Duration
	Log    string
}

// failoverWindow is how long requests are counted after the canary is listed.
const failoverWindow = 10 * time.Second

// Failover converges c's seeded cluster with two adc replicas (leader election on, the
// shipped defaults), SIGKILLs the leader once converged and measures the new leader's
// takeover; then stops it and starts kube-controller-manager on the same cluster, measured
// the same way.
func Failover(ctx context.Context, c Config) (*FailoverResult, error) {
	c = c.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, err := startEnv(ctx, c)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	total := c.Volumes()
	w := newWatcher(total)
	w.start(ctx, e.admin)
	att := &simulator.ExternalAttacher{Client: e.admin, Workers: c.AttacherWorkers}
	if err := att.Run(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the log folder %s: %w", c.LogDir, err)
	}
	logPath := func(who string) string {
		return filepath.Join(c.LogDir, sanitize(fmt.Sprintf("failover-%s-%s-%s.log", who, c.Name(), time.Now().Format("150405"))))
	}
	res := &FailoverResult{Scenario: c.Name(), Volumes: total}

	// Two replicas, as the Deployment runs them.
	ac := c
	ac.Controller = ADC
	ac.ADCFlags = append(slices.Clone(c.ADCFlags), "--leader-elect=true", "--leader-elect-namespace=default")
	start := time.Now()
	var replicas []*process
	for _, who := range []string{"adc-a", "adc-b"} {
		p, err := startProcess(ac, e.kubeconfig, logPath(who))
		if err != nil {
			return nil, err
		}
		defer p.stop()
		replicas = append(replicas, p)
	}
	fmt.Fprintf(c.Progress, "started two adc replicas (%s)\n", c.Name())
	if err := waitFor(ctx, c, start, nil, func(created, listed, _ int) bool { return created >= total && listed >= total },
		func(created, listed, _ int) string {
			return fmt.Sprintf("%d/%d VolumeAttachments, %d/%d listed in node status", created, total, listed, total)
		}, w); err != nil {
		return nil, fmt.Errorf("adc converging %s: %w", c.Name(), err)
	}
	res.Converge = time.Since(start)
	fmt.Fprintf(c.Progress, "  converged after %.2fs\n", res.Converge.Seconds())
	leader, standby := replicas[0], replicas[1]
	if !logHas(replicas[0].log.Name(), "Became the leader") {
		leader, standby = replicas[1], replicas[0]
	}
	lease, err := e.admin.CoordinationV1().Leases("default").Get(ctx, "adc", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading adc's Lease: %w", err)
	}
	holder := ptrString(lease.Spec.HolderIdentity)
	time.Sleep(5 * time.Second) // a quiet cluster before the kill, not a synchronisation

	// SIGKILL the leader; the canary pod arrives at once.
	kill := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing adc's leader: %w", err)
	}
	<-leader.exited
	fmt.Fprintf(c.Progress, "killed adc's leader (pid %d); waiting for the standby to take over\n", leader.pid())
	t, err := takeover(ctx, c, e.admin, w, standby, kill, nodeName(0), "canary-adc", func() (time.Duration, bool) {
		l, err := e.admin.CoordinationV1().Leases("default").Get(ctx, "adc", metav1.GetOptions{})
		if err != nil || ptrString(l.Spec.HolderIdentity) == holder || ptrString(l.Spec.HolderIdentity) == "" {
			return 0, false
		}
		return time.Since(kill), true
	}, "Caches synced; reconciling every node")
	if err != nil {
		return nil, fmt.Errorf("adc's takeover: %w", err)
	}
	t.Controller = ADC
	res.ADC = *t
	standby.stop()
	end := time.Now()

	// kube-controller-manager on the same (converged) cluster.
	kc := c
	kc.Controller = KCM
	kstart := time.Now()
	kp, err := startProcess(kc, e.kubeconfig, logPath("kcm"))
	if err != nil {
		return nil, err
	}
	defer kp.stop()
	fmt.Fprintf(c.Progress, "started kube-controller-manager on the converged cluster\n")
	kt, err := takeover(ctx, c, e.admin, w, kp, kstart, nodeName(min(1, c.Nodes-1)), "canary-kcm", nil, "Caches are synced")
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager's start: %w", err)
	}
	kt.Controller = KCM
	res.KCM = *kt
	kp.stop()
	kend := time.Now()

	waitStable(e.auditLog, 10*time.Second)
	reqs, err := auditlog.Read(e.auditLog)
	if err != nil {
		return nil, err
	}
	count := func(t *Takeover, from, to time.Time, canaryNode string) {
		t.Requests = auditcount.Tally(reqs, from, to)
		t.OtherWriteRequests = map[string]int64{}
		for _, r := range reqs {
			if r.Received.Before(from) || !r.Received.Before(to) || !isWrite(r.Verb) {
				continue
			}
			res := r.ResourcePath()
			switch {
			case res == "leases":
				t.LeaseWrites++
			case (r.Verb == "create" && res == "volumeattachments") || (res == "nodes/status" && r.Name == canaryNode):
				t.CanaryWrites++
			default:
				t.OtherWrites++
				t.OtherWriteRequests[r.Verb+" "+res]++
			}
		}
	}
	count(&res.ADC, kill, end, nodeName(0))
	count(&res.KCM, kstart, kend, nodeName(min(1, c.Nodes-1)))
	return res, nil
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// takeover creates the canary pod on node at start and waits until p leads (leading, nil for
// a controller without leader election), is ready (readyLine in its log), has created the
// canary's VolumeAttachment and listed its volume; then counts failoverWindow more and reads
// p's peak RSS and CPU.
func takeover(ctx context.Context, c Config, client kubernetes.Interface, w *watcher, p *process, start time.Time, node, canary string,
	leading func() (time.Duration, bool), readyLine string) (*Takeover, error) {
	if err := seedPod(ctx, client, node, canary); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the canary pod: %w", err)
	}
	t := &Takeover{Log: p.log.Name()}
	vaName := migration.VolumeAttachmentName("vol-"+canary, Driver, node)
	unique := uniqueNameOfPV("pv-" + canary)
	deadline := time.Now().Add(c.Timeout)
	for t.FirstDecision == 0 || t.CanaryListed == 0 || (leading != nil && t.Leading == 0) {
		if err := p.running(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not done within %s (leading %s, decision %s, listed %s)", c.Timeout, t.Leading, t.FirstDecision, t.CanaryListed)
		}
		if leading != nil && t.Leading == 0 {
			if d, ok := leading(); ok {
				t.Leading = d
				fmt.Fprintf(c.Progress, "  %6.2fs: new leader holds the Lease\n", d.Seconds())
			}
		}
		if at, ok := w.createdAt(vaName); ok && t.FirstDecision == 0 {
			t.FirstDecision = at.Sub(start)
			fmt.Fprintf(c.Progress, "  %6.2fs: canary VolumeAttachment created\n", t.FirstDecision.Seconds())
		}
		if at, ok := w.listedAt(unique); ok && t.CanaryListed == 0 {
			t.CanaryListed = at.Sub(start)
			fmt.Fprintf(c.Progress, "  %6.2fs: canary volume listed in node status\n", t.CanaryListed.Seconds())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling the watches and the Lease
		}
	}
	time.Sleep(failoverWindow) // a measurement window, not a synchronisation
	if at, ok := lastLogLine(p.log.Name(), readyLine); ok {
		t.Ready = at.Sub(start)
	}
	s, err := procstat.Read(p.pid())
	if err != nil {
		return nil, err
	}
	t.MaxRSS, t.CPU = s.MaxRSS, s.CPU
	return t, nil
}

// logHas reports whether the log file holds a line containing s.
func logHas(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}

// klogHeader is the start of a klog line: severity, MMDD, hh:mm:ss.micro.
var klogHeader = regexp.MustCompile(`^[IWEF](\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6})`)

// lastLogLine returns the time of the last klog line of the file containing s.
func lastLogLine(path, s string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer func() { _ = f.Close() }()
	var last time.Time
	found := false
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, s) {
			if m := klogHeader.FindStringSubmatch(line); m != nil {
				year := time.Now().Year()
				if t, perr := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s %s", year, m[1], m[2]), time.Local); perr == nil {
					last, found = t, true
				}
			}
		}
		if err == io.EOF || err != nil {
			break
		}
	}
	return last, found
}
