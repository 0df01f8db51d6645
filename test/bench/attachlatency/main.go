// Command attachlatency measures, on the real stack of the end-to-end suite (hollow kubelets,
// the kubernetes-csi external-attacher, the e2e mock CSI driver, adc run as its binary with
// default flags), how long a volume waits between its VolumeAttachment being attached and
// its node's status.volumesAttached listing it, when several volumes of one node attach
// together (`make bench-attach-latency`). That wait is most of what a pod waits for once its
// volume is attached: the kubelet mounts only volumes its node's status lists.
//
// Each round lands -per-node pods on every node at once, waits for all of them to be Running,
// then deletes them. With -quiet > 0 (the default) the next round starts only once the
// previous round's volumes are detached (no VolumeAttachment left, no node listing a volume)
// and adc has been idle for -quiet, long enough for its client budget to refill: each round
// is then a burst landing on a quiet cluster, the case issue 13 names. With -quiet 0 the
// rounds follow each other at once, and each round's attaches meet the previous round's
// detaches in adc's client budget (churn). The latencies come from watches (VolumeAttachment
// status.attached and Node status.volumesAttached), as the end-to-end suite measures them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// config is one benchmark run, from the flags.
type config struct {
	nodes, perNode, rounds int
	adcBinary              string // empty: built from this tree
	adcArgs                string
	quiet                  time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.nodes, "nodes", 3, "hollow kubelets")
	flag.IntVar(&c.perNode, "per-node", 8, "pods (one volume each) landing on every node together, per round")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds")
	flag.StringVar(&c.adcArgs, "adc-args", "", "extra adc flags, space separated (default flags otherwise)")
	flag.StringVar(&c.adcBinary, "adc", "", "the adc binary to run (default: built from this tree)")
	flag.DurationVar(&c.quiet, "quiet", 2*time.Second, "before each round, wait for the previous round's detaches and then this long (adc's default budget, 30 requests at 20 per second, refills in 1.5s); 0: rounds back to back")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "attachlatency:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	bin := c.adcBinary
	if bin == "" {
		built, cleanup, err := framework.BuildADC()
		if err != nil {
			return err
		}
		defer cleanup()
		bin = built
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var names []string
	for i := range c.nodes {
		names = append(names, fmt.Sprintf("node-%d", i))
	}
	opts := harness.Options{Nodes: names, ADCBinary: bin, Drivers: []harness.DriverOptions{{Name: harness.DefaultDriver}}}
	if c.adcArgs != "" {
		opts.ADCArgs = strings.Fields(c.adcArgs)
	}
	s, err := harness.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the stack: %w", err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "attachlatency: stopping the stack:", err)
		}
	}()
	tl, err := s.WatchTimeline(ctx)
	if err != nil {
		return err
	}
	between := "back to back: each round's attaches meet the previous round's detaches"
	if c.quiet > 0 {
		between = fmt.Sprintf("each after the previous round's detaches and %s idle", c.quiet)
	}
	fmt.Printf("attach latency on the real stack: %d nodes, %d volumes per node attaching together, %d rounds (%s), adc flags: %q\n",
		c.nodes, c.perNode, c.rounds, between, c.adcArgs)
	for r := range c.rounds {
		if r > 0 && c.quiet > 0 {
			if err := waitDetached(ctx, s); err != nil {
				return err
			}
			select {
			case <-time.After(c.quiet):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ns := fmt.Sprintf("round-%d", r)
		if err := s.CreateNamespace(ctx, ns); err != nil {
			return err
		}
		var pods []string
		for n := range names {
			for i := range c.perNode {
				vol := fmt.Sprintf("vol-%d-%d", n, i)
				if _, err := s.CreateVolume(ctx, ns, harness.Volume{Name: vol, Driver: harness.DefaultDriver, Handle: ns + "-" + vol}); err != nil {
					return err
				}
				pods = append(pods, fmt.Sprintf("app-%d-%d", n, i))
			}
		}
		// Create the pods of all nodes together, after their volumes exist.
		start := time.Now()
		for n, node := range names {
			for i := range c.perNode {
				pod := fmt.Sprintf("app-%d-%d", n, i)
				tl.PodCreated(ns, pod, time.Now())
				if _, err := s.CreatePod(ctx, ns, pod, node, fmt.Sprintf("vol-%d-%d", n, i)); err != nil {
					return err
				}
			}
		}
		if err := s.WaitPodsRunning(ctx, ns, pods, 2*time.Minute); err != nil {
			return err
		}
		fmt.Printf("  round %d: %d pods Running in %.2fs\n", r+1, len(pods), time.Since(start).Seconds())
		for _, p := range pods {
			if err := s.ControlPlane().Client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		for _, p := range pods {
			if err := s.WaitPodGone(ctx, ns, p, 2*time.Minute); err != nil {
				return err
			}
		}
	}
	lat := tl.AttachedToListed()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	startup := tl.PodStartup()
	fmt.Printf("VolumeAttachment attached -> listed in node status (%d volumes): p50 %s  p90 %s  p99 %s  max %s\n", len(lat),
		ms(harness.Percentile(lat, 50)), ms(harness.Percentile(lat, 90)), ms(harness.Percentile(lat, 99)), ms(lat[len(lat)-1]))
	fmt.Printf("pod created -> Running (%d pods): p50 %s  p90 %s\n", len(startup),
		ms(harness.Percentile(startup, 50)), ms(harness.Percentile(startup, 90)))
	fmt.Printf("goal (issue 13): attached -> listed p99 <= 100ms\n")
	return nil
}

// waitDetached waits until no VolumeAttachment is left and no node lists a volume attached.
func waitDetached(ctx context.Context, s *harness.Stack) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		vas, err := s.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil || len(vas.Items) > 0 {
			return false, nil
		}
		nodes, err := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range nodes.Items {
			if len(n.Status.VolumesAttached) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the previous round's detaches: %w", err)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
