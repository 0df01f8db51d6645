package cluster_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
	"github.com/migration-aware/adc/test/integration/framework"
)

// ModesEnv limits the modes the tests run in (comma separated, e.g. "stock"); unset, all three.
const ModesEnv = "CLUSTER_MODES"

// group is a scenario's own nodes: its pods go there (cluster.GroupLabel), so a scenario that
// stops, drains or taints a node touches no other scenario's pods on the shared cluster.
type group struct {
	name  string
	nodes int
	// zones, when set, is each node's zone (kubelet --node-labels, and the gce-pd driver's
	// reported topology).
	zones []string
}

// groups are the node groups of every scenario; each mode's cluster has all of them.
var groups = []group{
	{name: "sts", nodes: 3},
	{name: "down", nodes: 2},
	{name: "wait", nodes: 2},
	{name: "drain", nodes: 2},
	{name: "gce", nodes: 3, zones: []string{"zone-a", "zone-a", "zone-b"}},
	{name: "cloud", nodes: 2},
	// The node-loss scenarios under DetachPolicies (nodeloss_test.go), each in a zone of its
	// own: the node lifecycle controller taints lost nodes NoExecute through a rate limiter
	// per zone (--node-eviction-rate, one node per 10 s), so their nodes neither wait behind
	// the other scenarios' lost nodes (all in the zone "") nor make those wait.
	{name: "shut", nodes: 2, zones: []string{"zone-shut", "zone-shut"}},
	{name: "part", nodes: 2, zones: []string{"zone-part", "zone-part"}},
	{name: oneDiskGroup, nodes: 2}, // one disk, two PVs (onedisk_test.go)
}

// gceTopologyKey is the topology key of the GCE PD CSI driver; csi-translation-lib turns a
// zonal gce-pd PV's zone label into node affinity on it.
const gceTopologyKey = "topology.gke.io/zone"

// groupNodes returns the node names of group g.
func groupNodes(g string) []string {
	for _, gr := range groups {
		if gr.name == g {
			var out []string
			for i := range gr.nodes {
				out = append(out, fmt.Sprintf("%s-%d", gr.name, i+1))
			}
			return out
		}
	}
	return nil
}

// modeCluster is the cluster of one mode, shared by the scenarios of that mode, started by
// the first test that needs it.
type modeCluster struct {
	mode  cluster.Mode
	once  sync.Once
	stack *cluster.Cluster
	rec   *cluster.Recorder
	err   error
}

var (
	adcBinary string
	assets    cluster.Assets
	clusters  = map[cluster.Mode]*modeCluster{}
	// suiteCtx ends when the tests are done; the recorders' watches live that long.
	suiteCtx context.Context
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	// The scenarios wait on clocks (grace periods, tolerations, max-wait-for-unmount), not on
	// the CPU: every scenario of every mode runs at once unless -parallel says otherwise.
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", "64")
	}
	var err error
	if assets, err = findAssets(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	bin, cleanup, err := framework.BuildADC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	defer cleanup()
	adcBinary = bin
	modes, err := selectedModes()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	for _, md := range modes {
		clusters[md] = &modeCluster{mode: md}
	}
	ctx, cancel := context.WithCancel(context.Background())
	suiteCtx = ctx
	code := m.Run()
	printFigures(os.Stdout)
	cancel()
	if !stopClusters() {
		code = 1
	}
	return code
}

// findAssets finds the cluster's binaries, bringing kube-controller-manager with adc inside
// up to date with adc's sources first (a no-op when it is), as test/integration/kcm does, so
// that `go test` alone never runs a stale adc.
func findAssets() (cluster.Assets, error) {
	if os.Getenv(cluster.KCMADCEnv) == "" {
		_, file, _, _ := runtime.Caller(0)
		build := exec.Command(filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "build-kcm-adc.sh"))
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return cluster.Assets{}, fmt.Errorf("building kube-controller-manager with adc (hack/build-kcm-adc.sh): %w", err)
		}
	}
	return cluster.FindAssets()
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func selectedModes() ([]cluster.Mode, error) {
	v := os.Getenv(ModesEnv)
	if v == "" {
		return cluster.Modes, nil
	}
	var out []cluster.Mode
	for _, s := range strings.Split(v, ",") {
		md, err := cluster.ParseMode(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ModesEnv, err)
		}
		out = append(out, md)
	}
	return out, nil
}

// options returns the cluster options of mode: every group's nodes, the mock driver and the
// gce-pd CSI driver (zonal on the gce group's nodes).
func options(md cluster.Mode) cluster.Options {
	o := cluster.Options{Mode: md, Assets: assets, ADCBinary: adcBinary, NodeLabels: map[string]map[string]string{}, Log: os.Stderr}
	gce := harness.DriverOptions{Name: harness.GCEPDDriver, Topology: map[string]map[string]string{}}
	for _, g := range groups {
		for i, n := range groupNodes(g.name) {
			o.Nodes = append(o.Nodes, n)
			labels := map[string]string{cluster.GroupLabel: g.name}
			if g.zones != nil {
				labels[v1.LabelTopologyZone] = g.zones[i]
				gce.Topology[n] = map[string]string{gceTopologyKey: g.zones[i]}
			}
			o.NodeLabels[n] = labels
		}
	}
	o.Drivers = []harness.DriverOptions{{Name: harness.DefaultDriver}, gce}
	return o
}

// get returns the started cluster of mode, starting it on first use.
func (c *modeCluster) get(t *testing.T) {
	t.Helper()
	c.once.Do(func() {
		c.stack, c.err = cluster.Start(suiteCtx, options(c.mode))
		if c.err == nil {
			c.rec, c.err = cluster.Record(suiteCtx, c.stack.Client)
		}
	})
	if c.err != nil {
		t.Fatalf("cluster of mode %s: %v", c.mode, c.err)
	}
}

// forEachMode runs scenario in every selected mode, side by side, each on its mode's cluster.
func forEachMode(t *testing.T, scenario func(t *testing.T, c *modeCluster)) {
	t.Parallel()
	for _, md := range cluster.Modes {
		c := clusters[md]
		if c == nil {
			continue
		}
		t.Run(string(md), func(t *testing.T) {
			t.Parallel()
			c.get(t)
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(c.stack.Logs(60))
				}
			})
			scenario(t, c)
		})
	}
}

// stopClusters stops every started cluster, checks for leftovers and, in the standalone mode,
// that the API server refused adc nothing; it reports whether all went well.
func stopClusters() bool {
	ok := true
	var wg sync.WaitGroup
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		ok = false
	}
	for _, c := range clusters {
		if c.stack == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.stack
			if c.mode == cluster.Standalone {
				if err := adcRefused(s.Stack); err != nil {
					report("cluster %s: %v", c.mode, err)
				}
			}
			if err := s.Stop(); err != nil {
				report("cluster %s: stopping: %v", c.mode, err)
			}
			if left := s.Leftovers(); len(left) > 0 {
				report("cluster %s left things behind:\n  - %s", c.mode, strings.Join(left, "\n  - "))
			}
		}()
	}
	wg.Wait()
	return ok
}

// adcRefused returns an error listing every request of adc the API server refused (403).
func adcRefused(s *harness.Stack) error {
	reqs, err := framework.ReadAudit(s.ControlPlane())
	if err != nil {
		return err
	}
	return framework.CheckNoForbidden(reqs, s.ADCUser())
}

// figures are the timings the scenarios report, printed as one table after the tests.
var figures struct {
	sync.Mutex
	rows map[string]map[cluster.Mode]string
}

// figure records one timing of a scenario in a mode, and logs it.
func figure(t *testing.T, md cluster.Mode, what, value string) {
	t.Helper()
	t.Logf("figure: %s: %s", what, value)
	figures.Lock()
	defer figures.Unlock()
	if figures.rows == nil {
		figures.rows = map[string]map[cluster.Mode]string{}
	}
	if figures.rows[what] == nil {
		figures.rows[what] = map[cluster.Mode]string{}
	}
	figures.rows[what][md] = value
}

func printFigures(w *os.File) {
	figures.Lock()
	defer figures.Unlock()
	if len(figures.rows) == 0 {
		return
	}
	var keys []string
	for k := range figures.rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\ncluster scenario figures (watch times; %s)\n", strings.Join(modeNames(), " | "))
	for _, k := range keys {
		var vals []string
		for _, md := range cluster.Modes {
			v := figures.rows[k][md]
			if v == "" {
				v = "-"
			}
			vals = append(vals, v)
		}
		fmt.Fprintf(w, "  %-58s %s\n", k, strings.Join(vals, " | "))
	}
}

func modeNames() []string {
	var out []string
	for _, md := range cluster.Modes {
		out = append(out, string(md))
	}
	return out
}
