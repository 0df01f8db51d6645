// Command e2e is adc's end-to-end attach benchmark (`make bench-e2e`). It starts a test
// control plane, seeds N nodes x M pods with one CSI PersistentVolume each, runs the
// controller with a simulated external-attacher, and reports how long until every
// VolumeAttachment exists, until every node's status.volumesAttached is complete, the
// p50/p90 over volumes of the time until each is first listed in its node's status (what a
// waiting pod feels), and the controller's API requests per attach by verb. Then it deletes
// every pod and reports how long until every VolumeAttachment is gone and the requests per
// detach by verb (each detach is confirmed on a fresh read of its Node: those are the GETs).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/integration/framework"
	"github.com/migration-aware/adc/test/simulator"
)

const driver = "bench.csi.example.com"

type config struct {
	nodes, pods   int
	qps           float64
	burst         int
	workers       int
	timeout       time.Duration
	statusDelay   time.Duration
	jsonOut       string
	steadyWindow  time.Duration
	attachWorkers int
	attachBatches int
	parallel      int
	json          bool
	upstream      string
}

// Result is what one run measured; -json writes it.
type Result struct {
	Nodes, PodsPerNode, Volumes int
	QPS                         float64
	Burst, Workers              int
	AllVolumeAttachments        time.Duration
	AllNodeStatusComplete       time.Duration
	ListedP50, ListedP90        time.Duration
	RequestsByVerb              map[string]int64
	WritesPerAttach             float64
	APIBudget                   time.Duration
	SteadyStateGETs             int64
	SteadyStateRequests         int64
	// AllDetached is the time from deleting every pod until every VolumeAttachment is gone;
	// DetachRequestsByVerb the controller's requests meanwhile (adc only).
	AllDetached          time.Duration
	DetachRequestsByVerb map[string]int64
}

func main() {
	var c config
	flag.IntVar(&c.nodes, "nodes", 100, "nodes to seed")
	flag.IntVar(&c.pods, "pods", 20, "pods per node, one PersistentVolume each")
	flag.Float64Var(&c.qps, "qps", 20, "the controller's client QPS")
	flag.IntVar(&c.burst, "burst", 30, "the controller's client burst")
	flag.IntVar(&c.workers, "workers", 10, "controller workers")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after")
	flag.DurationVar(&c.statusDelay, "node-status-max-delay", 0, "controller NodeStatusMaxDelay (0: default)")
	flag.DurationVar(&c.steadyWindow, "steady-window", 5*time.Second, "how long to count requests after convergence")
	flag.IntVar(&c.attachWorkers, "attacher-workers", 16, "simulated external-attacher workers")
	flag.StringVar(&c.jsonOut, "json", "", "also write the result as JSON to this file")
	flag.StringVar(&c.upstream, "upstream", "", "path to kube-controller-manager (make kcm-assets): measure upstream's attach/detach controller instead of adc")
	flag.BoolVar(&c.json, "json-wire", false, "speak JSON instead of protobuf to the API server (controller and harness), for comparison")
	flag.IntVar(&c.attachBatches, "attach-batches", 0, "controller AttachBatches (0: default)")
	flag.IntVar(&c.parallel, "parallel-creates", 0, "controller MaxParallelCreatesPerNode (0: default)")
	klog.InitFlags(nil)
	flag.Parse()
	res, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
	report(os.Stdout, res)
	if c.jsonOut != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(c.jsonOut, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench-e2e:", err)
			os.Exit(1)
		}
	}
}

// countingTransport counts the controller's API requests by verb, and whether counting is on.
type countingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	verbs map[string]int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb := req.Method
	if req.Method == http.MethodGet {
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "WATCH"
		case isList(req.URL.Path):
			verb = "LIST"
		}
	}
	t.mu.Lock()
	t.verbs[verb]++
	t.mu.Unlock()
	return t.next.RoundTrip(req)
}

// isList tells a collection path (/api/v1/pods, /apis/storage.k8s.io/v1/volumeattachments,
// /api/v1/namespaces/ns/pods) from an object path.
func isList(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/<res> = 3, /apis/<g>/<v>/<res> = 4, namespaced collections add 2.
	n := len(parts)
	if parts[0] == "api" {
		return n == 3 || (n == 5 && parts[2] == "namespaces")
	}
	return n == 4 || (n == 6 && parts[3] == "namespaces")
}

func (t *countingTransport) snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.verbs))
	for k, v := range t.verbs {
		out[k] = v
	}
	return out
}

func run(c config) (*Result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, stop, err := framework.Start()
	if err != nil {
		return nil, err
	}
	defer stop()

	// The harness (seeding, measuring, the simulated attacher) speaks protobuf like the
	// controller, so that its own load on the API server is what a real cluster's would be.
	admin := rest.CopyConfig(cp.Config)
	admin.QPS, admin.Burst = 5000, 10000
	if !c.json {
		admin.ContentType = runtime.ContentTypeProtobuf
	}
	adminClient := kubernetes.NewForConfigOrDie(admin)

	fmt.Printf("seeding %d nodes x %d pods ...\n", c.nodes, c.pods)
	seedStart := time.Now()
	if err := seed(ctx, adminClient, c); err != nil {
		return nil, err
	}
	fmt.Printf("seeded in %s\n", time.Since(seedStart).Round(time.Millisecond))

	total := c.nodes * c.pods
	// Measurement: first time each VolumeAttachment is seen, and each volume listed.
	var mu sync.Mutex
	vaSeen := map[string]time.Time{}
	listed := map[string]time.Time{}
	var vaCount, listedCount, vaGone atomic.Int64
	done := make(chan struct{})
	var doneOnce sync.Once
	check := func() {
		if vaCount.Load() >= int64(total) && listedCount.Load() >= int64(total) {
			doneOnce.Do(func() { close(done) })
		}
	}
	mf := informers.NewSharedInformerFactory(adminClient, 0)
	_, _ = mf.Storage().V1().VolumeAttachments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			va := obj.(*storagev1.VolumeAttachment)
			mu.Lock()
			if _, ok := vaSeen[va.Name]; !ok {
				vaSeen[va.Name] = time.Now()
				vaCount.Add(1)
			}
			mu.Unlock()
			check()
		},
		DeleteFunc: func(interface{}) { vaGone.Add(1) },
	})
	onNode := func(obj interface{}) {
		n := obj.(*v1.Node)
		now := time.Now()
		mu.Lock()
		for _, av := range n.Status.VolumesAttached {
			if _, ok := listed[string(av.Name)]; !ok {
				listed[string(av.Name)] = now
				listedCount.Add(1)
			}
		}
		mu.Unlock()
		check()
	}
	_, _ = mf.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, cur interface{}) { onNode(cur) },
	})
	mf.Start(ctx.Done())
	mf.WaitForCacheSync(ctx.Done())

	attCfg := rest.CopyConfig(admin)
	att := &simulator.ExternalAttacher{Client: kubernetes.NewForConfigOrDie(attCfg), Workers: c.attachWorkers}
	if err := att.Run(ctx); err != nil {
		return nil, err
	}

	counter := &countingTransport{verbs: map[string]int64{}}
	var start time.Time
	if c.upstream != "" {
		// The same cluster, attached by upstream's controller instead: kube-controller-manager
		// with only the attach/detach controller. Its requests are not counted.
		start, err = runUpstream(ctx, c, cp.KubeconfigPath)
		if err != nil {
			return nil, err
		}
	} else {
		start, err = runADC(ctx, c, cp.Config, counter)
		if err != nil {
			return nil, err
		}
	}

	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	timeout := time.After(c.timeout)
wait:
	for {
		select {
		case <-done:
			break wait
		case <-progress.C:
			fmt.Printf("  %5.1fs: %d/%d VolumeAttachments, %d/%d listed in node status\n",
				time.Since(start).Seconds(), vaCount.Load(), total, listedCount.Load(), total)
		case <-timeout:
			return nil, fmt.Errorf("not converged within %s: %d/%d VolumeAttachments, %d/%d listed", c.timeout, vaCount.Load(), total, listedCount.Load(), total)
		}
	}
	converged := counter.snapshot()
	time.Sleep(c.steadyWindow) // a measurement window, not a synchronisation
	steady := counter.snapshot()

	// Detach phase: every pod goes at once (envtest runs no kubelet, so nothing reports the
	// volumes in use); adc removes each volume from node status, confirms on a fresh read of
	// the Node and deletes the VolumeAttachment.
	fmt.Printf("deleting every pod ...\n")
	detachStart := time.Now()
	zero := int64(0)
	if err := adminClient.CoreV1().Pods("bench").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return nil, fmt.Errorf("deleting the pods: %w", err)
	}
	for vaGone.Load() < int64(total) {
		select {
		case <-progress.C:
			fmt.Printf("  %5.1fs: %d/%d VolumeAttachments gone\n", time.Since(detachStart).Seconds(), vaGone.Load(), total)
		case <-timeout:
			return nil, fmt.Errorf("not detached within %s: %d/%d VolumeAttachments gone", c.timeout, vaGone.Load(), total)
		case <-time.After(20 * time.Millisecond):
		}
	}
	allDetached := time.Since(detachStart)
	detached := counter.snapshot()

	mu.Lock()
	defer mu.Unlock()
	res := &Result{Nodes: c.nodes, PodsPerNode: c.pods, Volumes: total, QPS: c.qps, Burst: c.burst, Workers: c.workers,
		RequestsByVerb: converged, AllDetached: allDetached, DetachRequestsByVerb: map[string]int64{}}
	for k, v := range detached {
		if d := v - steady[k]; d > 0 {
			res.DetachRequestsByVerb[k] = d
		}
	}
	var lastVA, lastListed time.Time
	for _, t := range vaSeen {
		if t.After(lastVA) {
			lastVA = t
		}
	}
	lat := make([]time.Duration, 0, len(listed))
	for _, t := range listed {
		if t.After(lastListed) {
			lastListed = t
		}
		lat = append(lat, t.Sub(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.AllVolumeAttachments = lastVA.Sub(start)
	res.AllNodeStatusComplete = lastListed.Sub(start)
	res.ListedP50 = lat[len(lat)*50/100]
	res.ListedP90 = lat[len(lat)*90/100]
	writes := converged["POST"] + converged["PUT"] + converged["PATCH"] + converged["DELETE"]
	res.WritesPerAttach = float64(writes) / float64(total)
	res.APIBudget = time.Duration(float64(total+c.nodes) / c.qps * float64(time.Second))
	res.SteadyStateGETs = steady["GET"] - converged["GET"]
	for k, v := range steady {
		res.SteadyStateRequests += v - converged[k]
	}
	return res, nil
}

// runADC starts adc in-process with the benchmark's client budget, counting its requests.
func runADC(ctx context.Context, c config, cfg *rest.Config, counter *countingTransport) (time.Time, error) {
	base := rest.CopyConfig(cfg)
	base.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	ctrlCfg, statusCfg := volumeattach.PrioritizedConfigs(base, float32(c.qps), c.burst)
	if c.json {
		for _, cfg := range []*rest.Config{ctrlCfg, statusCfg} {
			cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		}
	}
	ctrlClient := kubernetes.NewForConfigOrDie(ctrlCfg)
	opts := adc.Options{
		NodeStatusMaxDelay:        c.statusDelay,
		AttachBatches:             c.attachBatches,
		MaxParallelCreatesPerNode: c.parallel,
		NodeStatus:                &volumeattach.ClientStatusWriter{Client: kubernetes.NewForConfigOrDie(statusCfg)},
	}
	factory := informers.NewSharedInformerFactory(ctrlClient, 0)
	ctrl, err := adc.New(ctrlClient, nil, factory, opts)
	if err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	factory.Start(ctx.Done())
	go ctrl.Run(ctx, c.workers)
	return start, nil
}

// runUpstream starts upstream's kube-controller-manager (`make kcm-assets`) with only the
// attach/detach controller, at the benchmark's client budget, until ctx ends.
func runUpstream(ctx context.Context, c config, kubeconfig string) (time.Time, error) {
	cmd := exec.CommandContext(ctx, c.upstream, "--kubeconfig", kubeconfig,
		"--controllers", "persistentvolume-attach-detach-controller", "--leader-elect=false", "--secure-port=0",
		"--kube-api-qps", fmt.Sprint(c.qps), "--kube-api-burst", fmt.Sprint(c.burst), "-v", "0")
	log, err := os.CreateTemp("", "bench-kcm-*.log")
	if err != nil {
		return time.Time{}, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Printf("upstream kube-controller-manager log: %s\n", log.Name())
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return time.Time{}, fmt.Errorf("starting %s: %w", c.upstream, err)
	}
	go func() { _ = cmd.Wait() }()
	return start, nil
}

func report(w *os.File, r *Result) {
	fmt.Fprintf(w, "\nadc bench-e2e: %d nodes x %d pods = %d volumes, client %.0f QPS / %d burst, %d workers\n", r.Nodes, r.PodsPerNode, r.Volumes, r.QPS, r.Burst, r.Workers)
	fmt.Fprintf(w, "  every VolumeAttachment exists:        %8.2fs\n", r.AllVolumeAttachments.Seconds())
	fmt.Fprintf(w, "  every node status complete:           %8.2fs   (API budget, required writes / QPS: %.2fs)\n", r.AllNodeStatusComplete.Seconds(), r.APIBudget.Seconds())
	fmt.Fprintf(w, "  time to be listed in node status: p50 %8.2fs, p90 %.2fs\n", r.ListedP50.Seconds(), r.ListedP90.Seconds())
	fmt.Fprintf(w, "  requests per attach by verb:%s\n", perVolume(r.RequestsByVerb, r.Volumes))
	fmt.Fprintf(w, "  writes per attach: %.3f\n", r.WritesPerAttach)
	fmt.Fprintf(w, "  steady state (after convergence): %d GETs, %d requests in all\n", r.SteadyStateGETs, r.SteadyStateRequests)
	fmt.Fprintf(w, "  every pod deleted -> every VolumeAttachment gone: %.2fs\n", r.AllDetached.Seconds())
	if len(r.DetachRequestsByVerb) > 0 {
		fmt.Fprintf(w, "  requests per detach by verb:%s   (GET: fresh Node reads that confirm detaches)\n", perVolume(r.DetachRequestsByVerb, r.Volumes))
	}
}

// perVolume formats requests by verb divided by the number of volumes, verbs sorted.
func perVolume(byVerb map[string]int64, volumes int) string {
	verbs := make([]string, 0, len(byVerb))
	for v := range byVerb {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	var b strings.Builder
	for _, v := range verbs {
		fmt.Fprintf(&b, " %s=%.3f", v, float64(byVerb[v])/float64(volumes))
	}
	return b.String()
}

// seed creates the nodes and, per node, pods with one bound CSI claim each.
func seed(ctx context.Context, client kubernetes.Interface, c config) error {
	ns := "bench"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	kubelet := simulator.Kubelet{Client: client}
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	do := func(f func() error) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	for n := 0; n < c.nodes; n++ {
		node := fmt.Sprintf("node-%03d", n)
		do(func() error { _, err := kubelet.RegisterNode(ctx, node, true); return err })
	}
	wg.Wait()
	for n := 0; n < c.nodes; n++ {
		node := fmt.Sprintf("node-%03d", n)
		for p := 0; p < c.pods; p++ {
			name := fmt.Sprintf("%s-pod-%02d", node, p)
			do(func() error { return seedPod(ctx, client, ns, node, name) })
		}
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

func seedPod(ctx context.Context, client kubernetes.Interface, ns, node, name string) error {
	if _, err := simulator.BindNewClaim(ctx, client, ns, name, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + name}},
		},
	}); err != nil {
		return err
	}
	_, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		},
	}, metav1.CreateOptions{})
	return err
}
