// Package realdemo is `make demo REAL=1` (command test/e2e/demo): the mid-rollout story of
// `adc-demo` (internal/demo) told on a whole cluster on this machine (test/e2e/cluster, the
// standalone mode): kube-scheduler and kube-controller-manager v1.36.3 with every default
// controller but its attach/detach one, hollow kubelets v1.36.3, the Kubernetes e2e mock CSI
// driver registered with them, csi-attacher v4.13.0 and the adc binary. The demo creates only
// what a user would (PVs, claims naming them, pods asking for their node); the PV controller
// binds, the scheduler places. It prints which parts are real and what it still stages (a
// v1.36 kubelet reports every plugin migrated, so a not-migrated node's CSINode annotation is
// rewritten), waits until every pod that can run is Running and the others are held by adc for
// a stated reason, prints what happened, stops everything and checks that nothing is left
// behind. test/e2e runs it too, so it cannot drift away from the story.
package realdemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/internal/demo"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// Options configure one run of the demo on real parts.
type Options struct {
	// Out receives everything the demo prints.
	Out io.Writer
	// ADCBinary is the adc binary, run as `adc controller`.
	ADCBinary string
	// LateKubelet is how long after adc started the late node's kubelet starts.
	LateKubelet time.Duration
	// Timeout bounds the wait for the pods to settle (default 2 minutes).
	Timeout time.Duration
}

// attacherVersion is the external-attacher `make e2e-assets` builds (hack/csi-attacher).
const attacherVersion = "v4.13.0"

// ErrNotSettled is returned when the pods did not reach their expected state in time.
var ErrNotSettled = errors.New("the demo did not settle")

// Run tells the story on real parts, prints it to o.Out and leaves nothing behind, whatever
// happens. It fails when a pod did not end where the story says, when a kubelet undid what
// the demo staged, or when something was left behind.
func Run(ctx context.Context, o Options) (err error) {
	start := time.Now()
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	out := o.Out
	story := newStory()
	fmt.Fprintf(out, "adc-demo on REAL parts: the mid-rollout story of `make demo` (internal/demo)\n")
	story.printParts(out, o)

	ho, err := story.harnessOptions(o)
	if err != nil {
		return err
	}
	s, err := harness.Start(ctx, ho)
	if err != nil {
		return fmt.Errorf("starting the real parts (make e2e-assets and make cluster-assets build them): %w", err)
	}
	defer func() {
		stopStart := time.Now()
		stopErr := s.Stop()
		var leftErr error
		if left := s.Leftovers(); len(left) > 0 {
			leftErr = fmt.Errorf("left behind: %s", strings.Join(left, "; "))
		} else {
			fmt.Fprintf(out, "stopped every process in %s; nothing left behind (processes, folders, ports, mounts, iptables checked)\n",
				time.Since(stopStart).Round(100*time.Millisecond))
		}
		err = errors.Join(err, stopErr, leftErr)
		fmt.Fprintf(out, "demo took %s\n", time.Since(start).Round(100*time.Millisecond))
	}()
	var early []string
	for _, n := range story.nodes {
		if !n.Late {
			early = append(early, n.Name)
		}
	}
	if err := cluster.WaitNodesSchedulable(ctx, s.Client, early, time.Minute); err != nil {
		return err
	}
	if err := stageAnnotations(ctx, s.Client, story.staged); err != nil {
		return err
	}
	if err := demo.SeedClusterWorkloads(ctx, s.Client); err != nil {
		return fmt.Errorf("seeding the story's workloads: %w", err)
	}
	fmt.Fprintf(out, "seeded %d pods in namespace %s; starting adc\n\n", len(story.pods), demo.Namespace)
	if err := s.ADC().Start(); err != nil {
		return err
	}
	adcStart := time.Now()
	if err := s.WaitADCReady(ctx); err != nil {
		return err
	}

	w := &watcher{stack: s, story: story, adcStart: adcStart, running: map[string]time.Duration{}}
	settled, err := w.wait(ctx, o)
	if err != nil {
		return err
	}
	final := w.last
	if err := readRows(ctx, s, story, &final); err != nil {
		return err
	}
	fmt.Fprintln(out)
	printTable(out, story, final, w.running)
	if err := printADCReport(out, final); err != nil {
		return err
	}
	printCalls(out, s)
	if err := checkStaged(ctx, s.Client, story.staged); err != nil {
		return err
	}
	if !settled {
		fmt.Fprintln(out, "\nlast lines of each part's log:")
		fmt.Fprintln(out, s.Logs(15))
		return fmt.Errorf("%w within %s; the table above shows where each pod stands", ErrNotSettled, o.Timeout)
	}
	fmt.Fprintf(out, "\nsettled %s after adc started: %d pods Running on real kubelets, %d held by adc for the reason it states.\n\n",
		w.settledAt.Round(100*time.Millisecond), final.running, len(story.pods)-final.running)
	return nil
}

// story is the demo's story and what the real parts need staged for it.
type story struct {
	nodes []demo.StoryNode
	pods  []demo.StoryPod
	// drivers are every CSI driver of the story; noAttach those with attachRequired=false.
	drivers, noAttach []string
	// staged maps a node to the migrated-plugins annotation the demo writes on its CSINode.
	staged map[string]string
	// late are the nodes whose kubelet starts after adc.
	late []string
}

func newStory() *story {
	st := &story{nodes: demo.StoryNodes(), pods: demo.StoryPods(), staged: map[string]string{}}
	st.drivers, st.noAttach = demo.StoryDrivers()
	cfg := demo.Migration()
	for _, n := range st.nodes {
		if n.Late {
			st.late = append(st.late, n.Name)
			continue
		}
		// A v1.36 kubelet reports all seven plugins migrated; a node the story has not
		// migrated for a plugin its volumes use (in mode on) must be staged.
		for _, p := range st.pods {
			if p.Node == n.Name && p.InTreePlugin != "" && cfg.Mode(p.InTreePlugin) == migration.ModeOn && !n.Migrated(p.InTreePlugin) {
				st.staged[n.Name] = n.MigratedPlugins
			}
		}
	}
	return st
}

// harnessOptions are a cluster in the standalone mode (kube-scheduler, kube-controller-manager
// with every controller but its attach/detach controller, and the adc binary), with the story's
// nodes, drivers and zones, adc and the late node's kubelet left for Run to start.
func (st *story) harnessOptions(o Options) (harness.Options, error) {
	assets, err := cluster.FindAssets()
	if err != nil {
		return harness.Options{}, err
	}
	co := cluster.Options{Mode: cluster.Standalone, Assets: assets, ADCBinary: o.ADCBinary}
	for _, n := range st.nodes {
		co.Nodes = append(co.Nodes, n.Name)
	}
	for _, d := range st.drivers {
		co.Drivers = append(co.Drivers, harness.DriverOptions{Name: d, NoAttach: contains(st.noAttach, d)})
	}
	ho, err := co.HarnessOptions()
	if err != nil {
		return ho, err
	}
	zones, err := st.zones()
	if err != nil {
		return ho, err
	}
	placeInZones(&ho, zones)
	ho.DeferADC = true
	ho.DeferredKubelets = st.late
	ho.Log = indent{o.Out}
	if flag := demo.MigrationFlag(); flag != "" {
		ho.ADCArgs = append(ho.ADCArgs, "--migration", flag)
	}
	return ho, nil
}

// printParts says what runs for real and what the demo stages.
func (st *story) printParts(out io.Writer, o Options) {
	attachers := len(st.drivers) - len(st.noAttach)
	fmt.Fprintf(out, "REAL: a whole cluster on this machine (test/e2e/cluster, mode %s)\n", cluster.Standalone)
	fmt.Fprintf(out, "  kube-apiserver + etcd %s; kube-scheduler %[1]s places the pods; kube-controller-manager %[1]s with every\n", controlplane.KubernetesVersion)
	fmt.Fprintf(out, "    default controller but its own attach/detach one: the PV controller binds the claims, the node lifecycle\n")
	fmt.Fprintf(out, "    controller takes the not-ready taint off each node, the service account controllers serve the pods\n")
	fmt.Fprintf(out, "  %d kubelets %s (kubemark's hollow kubelet, controller attach/detach on; fake container runtime and mounter)\n", len(st.nodes), controlplane.KubernetesVersion)
	fmt.Fprintf(out, "    they write their Node, CSINode and volumesInUse, register the drivers and call NodeStage/NodePublish\n")
	fmt.Fprintf(out, "  %d CSI drivers: the Kubernetes e2e mock driver under the story's driver names, registered with every kubelet\n", len(st.drivers))
	fmt.Fprintf(out, "    through plugins_registry: %s (%s without attach)\n", strings.Join(st.drivers, ", "), strings.Join(st.noAttach, ", "))
	if zones, err := st.zones(); err == nil {
		printZones(out, zones)
	}
	fmt.Fprintf(out, "  %d csi-attacher %s, one per attachable driver: they attach what adc's VolumeAttachments ask for\n", attachers, attacherVersion)
	fmt.Fprintf(out, "  the adc binary, run as users run it: adc controller --migration %s\n", demo.MigrationFlag())
	fmt.Fprintf(out, "  the demo creates only what a user creates: PVs, claims naming them, pods asking for their node by its\n")
	fmt.Fprintf(out, "    kubernetes.io/hostname label\n")
	fmt.Fprintf(out, "STAGED (what real parts cannot show):\n")
	for n, a := range st.staged {
		fmt.Fprintf(out, "  %s: its kubelet writes all 7 plugins migrated in its CSINode (every v1.36 kubelet does); the demo rewrites\n", n)
		fmt.Fprintf(out, "    the annotation to %q before adc starts, as a node not yet migrated reports. Its kubelet still mounts\n", a)
		fmt.Fprintf(out, "    in-tree volumes only through CSI and no in-tree attacher exists among these parts, so its in-tree volume\n")
		fmt.Fprintf(out, "    stays held by adc (the simulated demo attaches it with a simulated in-tree attacher).\n")
	}
	for _, n := range st.late {
		fmt.Fprintf(out, "LATE: %s's kubelet starts %s after adc: until then its Node and CSINode do not exist, and the scheduler\n", n, o.LateKubelet)
		fmt.Fprintf(out, "  leaves its pod unplaced.\n")
	}
	fmt.Fprintln(out)
}

// stageAnnotations writes the staged migrated-plugins annotations on the kubelets' CSINodes.
func stageAnnotations(ctx context.Context, c kubernetes.Interface, staged map[string]string) error {
	for node, value := range staged {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cn, err := c.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cn.Annotations == nil {
				cn.Annotations = map[string]string{}
			}
			cn.Annotations[migration.MigratedPluginsAnnotation] = value
			_, err = c.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("staging the migrated-plugins annotation of CSINode %s: %w", node, err)
		}
	}
	return nil
}

// checkStaged fails when a kubelet rewrote a staged annotation during the run: the story
// would then no longer be the one printed.
func checkStaged(ctx context.Context, c kubernetes.Interface, staged map[string]string) error {
	for node, value := range staged {
		cn, err := c.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading CSINode %s: %w", node, err)
		}
		if err != nil || cn.Annotations[migration.MigratedPluginsAnnotation] != value {
			return fmt.Errorf("the kubelet of %s rewrote its staged CSINode annotation during the demo; the run does not show the story", node)
		}
	}
	return nil
}

// indent prefixes the harness's progress lines.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(i.w, "  %s", p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
