// Command hollowkubelet runs a real kubelet (Kubernetes v1.36.3, through kubemark's hollow
// kubelet) without containers and without touching the host, for adc's end-to-end suite.
//
// Stock `kubemark --morph=kubelet` cannot serve there: it turns controller attach/detach off,
// so its node is not managed by an attach/detach controller and it refuses attachable CSI
// volumes. This program builds the same kubelet with controller attach/detach on, no iptables
// chains, a per-node root directory and ports, and a configurable node status frequency (the
// kubelet reports volumesInUse only that often).
//
// Nothing touches the host: the container runtime and image service are kubemark's in-process
// fakes, the mounter is a FakeMounter, the OS interface is a fake, every directory lives under
// --root-dir. On SIGTERM or SIGINT it exits 0 and removes --root-dir if it created it (a root
// dir that existed before is kept, as a real node keeps /var/lib/kubelet across restarts, so
// the CSI driver's sockets in it survive a kubelet restart).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

// config is what the command line sets.
type config struct {
	kubeconfig       string
	nodeName         string
	rootDir          string
	port             int
	statusFrequency  time.Duration
	qps              float64
	burst            int
	maxPods          int
	fakeRuntimeDelay time.Duration
	leaseDuration    time.Duration
	labels           labelList
}

func main() {
	var c config
	fs := flag.CommandLine
	klog.InitFlags(fs)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "Path to the kubeconfig of the API server (required).")
	fs.StringVar(&c.nodeName, "node-name", "", "Name of the Node this kubelet registers (required).")
	fs.StringVar(&c.rootDir, "root-dir", "", "Kubelet root directory: pods, plugins, plugins_registry, certificates. Created if missing and then removed on exit (required).")
	fs.IntVar(&c.port, "port", 0, "Port of the kubelet API on 127.0.0.1 (required, one per kubelet on a host); the read-only port and the healthz port are off.")
	fs.DurationVar(&c.statusFrequency, "node-status-update-frequency", 10*time.Second, "How often the kubelet computes node status (and so reports volumesInUse).")
	fs.Float64Var(&c.qps, "kube-api-qps", 50, "Queries per second to the API server.")
	fs.IntVar(&c.burst, "kube-api-burst", 100, "Burst of queries to the API server.")
	fs.IntVar(&c.maxPods, "max-pods", 110, "Pods this kubelet accepts.")
	fs.DurationVar(&c.leaseDuration, "node-lease-duration", 40*time.Second, "Duration of the node's Lease (whole seconds); the kubelet renews it every quarter of that, and the node lifecycle controller's --node-monitor-grace-period must be longer.")
	fs.Var(&c.labels, "node-labels", "Labels the kubelet registers its Node with, KEY=VALUE[,KEY=VALUE...], as the kubelet's --node-labels (e.g. topology.kubernetes.io/zone, which a cloud provider would set).")
	flag.Parse()
	if err := run(c); err != nil {
		klog.ErrorS(err, "hollow kubelet failed", "node", c.nodeName)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func (c config) validate() error {
	switch {
	case c.kubeconfig == "":
		return errors.New("--kubeconfig is required")
	case c.nodeName == "":
		return errors.New("--node-name is required")
	case c.rootDir == "" || !filepath.IsAbs(c.rootDir):
		return fmt.Errorf("--root-dir must be an absolute path, got %q", c.rootDir)
	case c.port <= 0 || c.port > 65535:
		return fmt.Errorf("--port must be a free TCP port, got %d", c.port)
	case c.statusFrequency <= 0:
		return fmt.Errorf("--node-status-update-frequency must be positive, got %s", c.statusFrequency)
	case c.leaseDuration < time.Second || c.leaseDuration%time.Second != 0:
		return fmt.Errorf("--node-lease-duration must be whole seconds, at least 1s, got %s", c.leaseDuration)
	}
	return nil
}

func run(c config) error {
	if err := c.validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := klog.FromContext(ctx).WithValues("node", c.nodeName)
	ctx = klog.NewContext(ctx, logger)

	created, err := ensureDir(c.rootDir)
	if err != nil {
		return err
	}
	if created {
		defer removeAll(logger, c.rootDir)
	}

	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", c.kubeconfig, err)
	}
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	restCfg.QPS = float32(c.qps)
	restCfg.Burst = c.burst
	restCfg.UserAgent = "hollow-kubelet/" + c.nodeName
	client, err := clientset.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating the kubelet's client: %w", err)
	}

	flags, kc, err := kubeletConfig(c)
	if err != nil {
		return err
	}
	// The heartbeat client as kubemark builds it: unthrottled, timing out within one status
	// period or lease duration.
	hb := *restCfg
	hb.QPS = -1
	hb.Timeout = min(kc.NodeStatusUpdateFrequency.Duration, time.Duration(kc.NodeLeaseDurationSeconds)*time.Second)
	heartbeatClient, err := clientset.NewForConfig(&hb)
	if err != nil {
		return fmt.Errorf("creating the kubelet's heartbeat client: %w", err)
	}

	// kubemark's in-process fake CRI runtime, on a socket in the root dir, and its fake image
	// service (no host image service).
	criDir := filepath.Join(c.rootDir, "cri")
	if err := os.MkdirAll(criDir, 0o700); err != nil {
		return fmt.Errorf("creating %s for the fake container runtime: %w", criDir, err)
	}
	endpoint := "unix://" + filepath.Join(criDir, "runtime.sock")
	fakeRuntime := fakeremote.NewFakeRemoteRuntime()
	if err := fakeRuntime.Start(endpoint); err != nil {
		return fmt.Errorf("starting the fake container runtime on %s: %w", endpoint, err)
	}
	defer fakeRuntime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeService(ctx, endpoint, 15*time.Second, noop.NewTracerProvider(), false)
	if err != nil {
		return fmt.Errorf("connecting to the fake container runtime: %w", err)
	}

	hk := kubemark.NewHollowKubelet(flags, kc, client, heartbeatClient,
		&cadvisortest.Fake{NodeName: c.nodeName}, fakeRuntime.ImageService, runtimeService, cm.NewStubContainerManager())
	// HollowKubelet.Run blocks forever; RunKubelet starts the kubelet's loops and returns, so
	// this process can stop on a signal and clean up.
	if err := kubeletapp.RunKubelet(ctx, &options.KubeletServer{KubeletFlags: *hk.KubeletFlags, KubeletConfiguration: *hk.KubeletConfiguration}, hk.KubeletDeps); err != nil {
		return fmt.Errorf("running the kubelet of node %s: %w", c.nodeName, err)
	}
	logger.Info("Hollow kubelet running", "rootDir", c.rootDir, "port", c.port, "nodeStatusUpdateFrequency", c.statusFrequency)
	<-ctx.Done()
	logger.Info("Hollow kubelet stopping")
	return nil
}

// kubeletConfig is kubemark's hollow kubelet configuration with controller attach/detach on,
// iptables chains off and every path and port of this node's own.
func kubeletConfig(c config) (*options.KubeletFlags, *kubeletconfig.KubeletConfiguration, error) {
	flags, kc := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:            c.nodeName,
		KubeletPort:         c.port,
		KubeletReadOnlyPort: 0,
		MaxPods:             c.maxPods,
		NodeLabels:          c.labels.values(),
	})
	// GetHollowKubeletConfig makes a fresh hollow-kubelet.N folder in /tmp (TMPDIR ignored);
	// this kubelet uses --root-dir instead, so that folder goes at once.
	if err := os.RemoveAll(flags.RootDirectory); err != nil {
		return nil, nil, fmt.Errorf("removing kubemark's default root dir %s: %w", flags.RootDirectory, err)
	}
	flags.RootDirectory = c.rootDir
	flags.CertDirectory = filepath.Join(c.rootDir, "pki")
	// No static pods: watching their folder costs an inotify instance per kubelet, and a host
	// allows 128 per user by default (fs.inotify.max_user_instances); the plugin watcher's is
	// then the only one, so about 120 kubelets fit on one host instead of about 60.
	kc.StaticPodPath = ""
	kc.PodLogsDir = filepath.Join(c.rootDir, "pod-logs")
	kc.VolumePluginDir = filepath.Join(c.rootDir, "volume-plugins")
	for _, d := range []string{kc.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	kc.EnableControllerAttachDetach = true
	kc.MakeIPTablesUtilChains = false
	kc.Address = "127.0.0.1"
	kc.Port = int32(c.port)
	kc.ReadOnlyPort = 0
	kc.HealthzPort = 0
	kc.NodeStatusUpdateFrequency.Duration = c.statusFrequency
	kc.NodeLeaseDurationSeconds = int32(c.leaseDuration / time.Second)
	return flags, kc, nil
}

// labelList is the --node-labels flag: KEY=VALUE pairs, comma separated, repeatable.
type labelList struct{ m map[string]string }

func (l *labelList) String() string {
	parts := make([]string, 0, len(l.m))
	for k, v := range l.m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// values returns the labels, an empty map when none are set.
func (l *labelList) values() map[string]string {
	if l.m == nil {
		return map[string]string{}
	}
	return l.m
}

func (l *labelList) Set(v string) error {
	if l.m == nil {
		l.m = map[string]string{}
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE[,KEY=VALUE...], got %q", v)
		}
		l.m[k] = val
	}
	return nil
}

// ensureDir creates dir when it is missing and says whether it did.
func ensureDir(dir string) (bool, error) {
	if _, err := os.Stat(dir); err == nil {
		return false, nil
	} else if !os.IsNotExist(err) {
		return false, fmt.Errorf("checking root dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, fmt.Errorf("creating root dir %s: %w", dir, err)
	}
	return true, nil
}

// removeAll removes dir, retrying briefly: the kubelet's loops may still write into it while
// the process stops.
func removeAll(logger klog.Logger, dir string) {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	logger.Error(err, "Could not remove the kubelet root dir; remove it by hand", "rootDir", dir)
}
