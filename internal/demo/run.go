package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/server"
	"github.com/migration-aware/adc/test/simulator"
)

// Options configures a demo run.
type Options struct {
	// Out receives the progress bar, the decision table and the summary.
	Out io.Writer
	// Timeout bounds how long the demo waits to converge.
	Timeout time.Duration
	// LateCSINode is how long after the controller starts the late node reports its CSINode.
	LateCSINode time.Duration
	// AttachDelay is how long the simulated attachers take per attach.
	AttachDelay time.Duration
	// Serve keeps the demo running with the HTTP listener up after it converged.
	Serve bool
	// HTTPAddr is the listener's address when Serve is set.
	HTTPAddr string
	// Observer receives the controller's operations (metrics).
	Observer readmodel.Observer
	// Register adds pages (the dashboard) to the listener for the running controller.
	Register func(srv *server.Server, ctrl *adc.Controller)
	// Interactive redraws the progress bar in place; otherwise a line is printed per change.
	Interactive bool
}

// ErrNotConverged is returned when the cluster did not reach the expected state in time.
var ErrNotConverged = fmt.Errorf("the demo cluster did not converge")

// Run starts a local control plane, seeds it, runs the controller with the simulators until
// every pair reached its expected state, and prints the result.
func Run(ctx context.Context, o Options) error {
	out := o.Out
	fmt.Fprintf(out, "adc-demo: starting a local control plane (kube-apiserver %s + etcd) ...\n", controlplane.KubernetesVersion)
	cp, stop, err := controlplane.Start()
	if err != nil {
		return err
	}
	defer stop()
	c := cp.Client
	if err := seed(ctx, c); err != nil {
		return fmt.Errorf("seeding the demo cluster: %w", err)
	}
	fmt.Fprintf(out, "seeded %d nodes (%s reports its CSINode late) and %d pods in namespace %s\n", len(nodes), lateNode, len(workloads), Namespace)
	fmt.Fprintf(out, "simulators: SIMULATED external-attacher (all CSI drivers), SIMULATED kubelets (they register nodes and CSINodes;\n"+
		"  nothing mounts, no pod runs), SIMULATED in-tree attacher; no CSI driver runs. The same story on real kubelets,\n"+
		"  csi-attacher and a CSI driver: make demo REAL=1\n")

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	attacher := &simulator.ExternalAttacher{Client: c, Delay: o.AttachDelay}
	if err := attacher.Run(runCtx); err != nil {
		return err
	}
	inTree := &simulator.InTreeAttacher{Delay: o.AttachDelay}
	factory := adc.NewInformerFactory(c, 0)
	ctrl, err := adc.New(c, cp.Dynamic, factory, adc.Options{Migration: Migration(), InTreeAttacher: inTree, Observer: o.Observer})
	if err != nil {
		return err
	}
	factory.Start(runCtx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctrl.Run(runCtx, 4) }()
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()
	fmt.Fprintf(out, "controller: migration %s\n\n", ctrl.Config().String())

	go func() {
		select {
		case <-time.After(o.LateCSINode):
		case <-runCtx.Done():
			return
		}
		n := nodes[len(nodes)-1]
		if err := (simulator.Kubelet{Client: c}).ReportCSINode(runCtx, n.name, "kubernetes.io/aws-ebs,kubernetes.io/gce-pd", n.drivers...); err != nil {
			klog.FromContext(ctx).Error(err, "Simulated late CSINode registration failed")
		}
	}()

	converged := waitConverged(runCtx, o, ctrl, func(node string) map[string]bool { return listedOnNode(runCtx, cp, node) })
	fmt.Fprintln(out)
	printTable(out, ctrl.Snapshot())
	printSummary(out, ctrl)
	if !converged {
		return fmt.Errorf("%w within %s; the table above shows where each volume stands", ErrNotConverged, o.Timeout)
	}
	fmt.Fprintln(out, "\nconverged: every volume is attached the way its node's migration state says, or held for a stated reason.")
	if !o.Serve {
		return nil
	}
	srv := server.New()
	srv.AddReadyCheck(server.Check{Name: "informer-sync", Check: func(*http.Request) error {
		if !ctrl.HasSynced() {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}})
	if o.Register != nil {
		o.Register(srv, ctrl)
	}
	l, err := server.ListenLoopback(o.HTTPAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nserving the dashboard on http://%s/dashboard/ (metrics on /metrics); the cluster's kubeconfig is %s\nPress Ctrl-C to stop.\n", l.Addr(), cp.KubeconfigPath)
	return srv.Serve(ctx, l)
}

// listedOnNode returns the unique names in the node's status.volumesAttached.
func listedOnNode(ctx context.Context, cp *controlplane.ControlPlane, node string) map[string]bool {
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	out := map[string]bool{}
	if err != nil {
		return out
	}
	for _, av := range n.Status.VolumesAttached {
		out[string(av.Name)] = true
	}
	return out
}

// settled reports how many workloads reached their expected state (attached ones also
// listed in their node's status).
func settled(snap []readmodel.PairState, listed func(string) map[string]bool) (done, held int) {
	byPod := map[string]readmodel.PairState{}
	for _, s := range snap {
		if s.Pod != "" {
			byPod[s.Pod] = s
		}
		if s.Phase == readmodel.PhaseHeld {
			held++
		}
	}
	cache := map[string]map[string]bool{}
	for _, w := range workloads {
		s, ok := byPod[Namespace+"/"+w.pod]
		if !ok {
			continue
		}
		got := expectation{s.Mechanism, s.Phase}
		if got != w.want && (w.wantAlt == expectation{} || got != w.wantAlt) {
			continue
		}
		if s.Phase == readmodel.PhaseAttached {
			if cache[s.Node] == nil {
				cache[s.Node] = listed(s.Node)
			}
			if !cache[s.Node][s.UniqueName] {
				continue
			}
		}
		done++
	}
	return done, held
}

func waitConverged(ctx context.Context, o Options, ctrl *adc.Controller, listed func(string) map[string]bool) bool {
	deadline := time.After(o.Timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := ""
	start := time.Now()
	for {
		done, held := settled(ctrl.Snapshot(), listed)
		line := progressLine(done, len(workloads), held, time.Since(start))
		switch {
		case o.Interactive:
			fmt.Fprintf(o.Out, "\r%s", line)
		case line[:strings.Index(line, "]")] != last:
			fmt.Fprintln(o.Out, line)
			last = line[:strings.Index(line, "]")]
		}
		if done == len(workloads) {
			if o.Interactive {
				fmt.Fprintln(o.Out)
			}
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			fmt.Fprintln(o.Out)
			return false
		case <-tick.C:
		}
	}
}

func progressLine(done, total, held int, elapsed time.Duration) string {
	const width = 30
	filled := done * width / total
	return fmt.Sprintf("  converging [%s%s] %2d/%d volumes settled, %d held  %5.1fs",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, held, elapsed.Seconds())
}
