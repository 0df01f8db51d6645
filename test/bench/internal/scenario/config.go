// Package scenario runs one end-to-end attach benchmark: a test control plane seeded with
// N nodes x M pods (one CSI PersistentVolume each), a simulated external-attacher, and one
// attach/detach controller under test, adc or kube-controller-manager 1.36.3, each run as
// its own process with the same client budget, leader election off. It measures both the
// same way: latencies from the harness's own watches, peak RSS and CPU time from /proc, and
// API requests from the kube-apiserver's audit log (the controller authenticates as its own
// user).
package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

func init() {
	// envtest logs through controller-runtime's logger, which complains with a stack trace
	// when nobody set it; the benchmark prints its own progress instead.
	crlog.SetLogger(logr.Discard())
	// A kube-apiserver on a seeded etcd of 50,000 pods takes longer to start than envtest's
	// default 20 s allows on a busy machine.
	for _, env := range []string{"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT"} {
		if os.Getenv(env) == "" {
			_ = os.Setenv(env, "2m")
		}
	}
}

// Kind is the controller under test.
type Kind string

const (
	// KCM is upstream kube-controller-manager with only its attach/detach controller.
	KCM Kind = "kcm"
	// ADC is the adc binary (`adc controller`).
	ADC Kind = "adc"
	// ADCInProcess is adc started inside the benchmark's process (Config.StartInProcess),
	// for experiments with options that have no flag; RSS and CPU are not measured then.
	ADCInProcess Kind = "adc-in-process"
	// KCMADC is kube-controller-manager with adc inside (`make kcm-adc`) in place of its
	// attach/detach controller: adc as the library, on the host's informer factory and client.
	KCMADC Kind = "kcm-adc"
)

// Config is one run.
type Config struct {
	// Nodes and PodsPerNode size the cluster: one pod per volume.
	Nodes, PodsPerNode int
	// QPS and Burst are the controller's client budget (--kube-api-qps/--kube-api-burst).
	QPS   float64
	Burst int
	// Controller is what runs; KCMPath, KCMADCPath and ADCPath are the binaries.
	Controller Kind
	KCMPath    string
	KCMADCPath string
	ADCPath    string
	// ADCFlags are extra flags for `adc controller`, e.g. --node-status-max-delay=1s.
	ADCFlags []string
	// StartInProcess starts adc in this process with the controller's rest.Config, until
	// ctx ends (Controller ADCInProcess).
	StartInProcess func(ctx context.Context, cfg *rest.Config) error
	// AttacherWorkers is the simulated external-attacher's parallelism.
	AttacherWorkers int
	// SeedWorkers is how many creates the seeding sends at once.
	SeedWorkers int
	// SeedCache, when set, is a folder that keeps the seeded etcd data of each size for later
	// runs; empty seeds into a temporary folder that is removed at the end.
	SeedCache string
	// Timeout bounds each phase (attach, detach).
	Timeout time.Duration
	// SteadyWindow is how long requests are counted after convergence.
	SteadyWindow time.Duration
	// LogDir keeps the controller's log (a temporary folder's is removed).
	LogDir string
	// CPUProfile, when set (Controller ADC), is where a CPU profile taken through adc's
	// /debug/pprof/profile is written: CPUProfileSeconds long, from CPUProfileDelay after
	// the start.
	CPUProfile        string
	CPUProfileDelay   time.Duration
	CPUProfileSeconds int
	// HeapProfile, when set (Controller ADC), is where adc's /debug/pprof/heap is written,
	// HeapProfileDelay after the start: what was live at its last collection, and every
	// allocation since it started (pprof -sample_index=inuse_space or alloc_space).
	HeapProfile      string
	HeapProfileDelay time.Duration
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

// Volumes is the number of volumes (and pods and attaches).
func (c Config) Volumes() int { return c.Nodes * c.PodsPerNode }

// Name says which scenario this is, e.g. "100x20@1000/2000".
func (c Config) Name() string {
	return fmt.Sprintf("%dx%d@%g/%d", c.Nodes, c.PodsPerNode, c.QPS, c.Burst)
}

func (c Config) withDefaults() Config {
	if c.AttacherWorkers == 0 {
		c.AttacherWorkers = 16
	}
	if c.SeedWorkers == 0 {
		c.SeedWorkers = 64
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.SteadyWindow == 0 {
		c.SteadyWindow = 5 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}
