// Package realdemo is `make demo REAL=1` (command test/e2e/demo): the mid-rollout story of
// `adc-demo` (internal/demo) told on the real parts adc talks to in a cluster, through the
// end-to-end harness (test/e2e/harness): hollow kubelets v1.36.3, the Kubernetes e2e mock CSI
// driver registered with them, csi-attacher v4.13.0 and the adc binary. It prints which parts
// are real and what it stages, waits until every pod that can run is Running and the others
// are held by adc for a stated reason, prints what happened, stops everything and checks that
// nothing is left behind. test/e2e runs it too, so it cannot drift away from the story.
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

	s, err := harness.Start(ctx, story.harnessOptions(o))
	if err != nil {
		return fmt.Errorf("starting the real parts (make e2e-assets builds them): %w", err)
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

	if err := stageAnnotations(ctx, s.Client, story.staged); err != nil {
		return err
	}
	if err := demo.SeedWorkloads(ctx, s.Client); err != nil {
		return fmt.Errorf("seeding the story's workloads: %w", err)
	}
	topology, err := topologyLabels(ctx, s, story)
	if err != nil {
		return err
	}
	printTopology(out, topology)
	pending := map[string]map[string]string{}
	for node, labels := range topology {
		if ok, err := labelNode(ctx, s, node, labels); err != nil {
			return err
		} else if !ok {
			pending[node] = labels // a late node: labelled as soon as its kubelet registers it
		}
	}
	fmt.Fprintf(out, "seeded %d pods in namespace %s; starting adc\n\n", len(story.pods), demo.Namespace)
	if err := s.ADC().Start(); err != nil {
		return err
	}
	adcStart := time.Now()
	if err := s.WaitADCReady(ctx); err != nil {
		return err
	}

	w := &watcher{stack: s, story: story, adcStart: adcStart, running: map[string]time.Duration{}, pendingLabels: pending}
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

func (st *story) harnessOptions(o Options) harness.Options {
	ho := harness.Options{
		ADCBinary:        o.ADCBinary,
		DeferADC:         true,
		DeferredKubelets: st.late,
		Log:              indent{o.Out},
	}
	if flag := demo.MigrationFlag(); flag != "" {
		ho.ADCArgs = []string{"--migration", flag}
	}
	for _, n := range st.nodes {
		ho.Nodes = append(ho.Nodes, n.Name)
	}
	for _, d := range st.drivers {
		ho.Drivers = append(ho.Drivers, harness.DriverOptions{Name: d, NoAttach: contains(st.noAttach, d)})
	}
	return ho
}

// printParts says what runs for real and what the demo stages.
func (st *story) printParts(out io.Writer, o Options) {
	attachers := len(st.drivers) - len(st.noAttach)
	fmt.Fprintf(out, "REAL:\n")
	fmt.Fprintf(out, "  kube-apiserver + etcd %s (envtest; no scheduler, PV controller or node lifecycle controller)\n", controlplane.KubernetesVersion)
	fmt.Fprintf(out, "  %d kubelets %s (kubemark's hollow kubelet, controller attach/detach on; fake container runtime and mounter)\n", len(st.nodes), controlplane.KubernetesVersion)
	fmt.Fprintf(out, "    they write their Node, CSINode and volumesInUse, register the drivers and call NodeStage/NodePublish\n")
	fmt.Fprintf(out, "  %d CSI drivers: the Kubernetes e2e mock driver under the story's driver names, registered with every kubelet\n", len(st.drivers))
	fmt.Fprintf(out, "    through plugins_registry: %s (%s without attach)\n", strings.Join(st.drivers, ", "), strings.Join(st.noAttach, ", "))
	fmt.Fprintf(out, "  %d csi-attacher %s, one per attachable driver: they attach what adc's VolumeAttachments ask for\n", attachers, attacherVersion)
	fmt.Fprintf(out, "  the adc binary, run as users run it: adc controller --migration %s\n", demo.MigrationFlag())
	fmt.Fprintf(out, "STAGED (what real parts cannot show):\n")
	for n, a := range st.staged {
		fmt.Fprintf(out, "  %s: its kubelet writes all 7 plugins migrated in its CSINode (every v1.36 kubelet does); the demo rewrites\n", n)
		fmt.Fprintf(out, "    the annotation to %q before adc starts, as a node not yet migrated reports. Its kubelet still mounts\n", a)
		fmt.Fprintf(out, "    in-tree volumes only through CSI and no in-tree attacher exists among these parts, so its in-tree volume\n")
		fmt.Fprintf(out, "    stays held by adc (the simulated demo attaches it with a simulated in-tree attacher).\n")
	}
	fmt.Fprintf(out, "  the demo binds the PVs and claims (no PV controller) and places the pods on their nodes (no scheduler)\n")
	for _, n := range st.late {
		fmt.Fprintf(out, "LATE: %s's kubelet starts %s after adc: until then its Node and CSINode do not exist.\n", n, o.LateKubelet)
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
