package scenario

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/migration-aware/adc/internal/controlplane"
	"github.com/migration-aware/adc/test/simulator"
)

const (
	// Driver is the CSI driver of every benchmark volume.
	Driver = "bench.csi.example.com"
	// Namespace holds the benchmark's pods and claims.
	Namespace = "bench"
	// seedFormat names what seed writes; change it when seed changes, so cached seeds of the
	// old shape are not reused.
	seedFormat = 1
	// seedComplete marks a cached seed folder as whole.
	seedComplete = "seed-complete"
)

// nodeName and podName name the seeded objects; a pod's claim has its name, its PV is
// "pv-"+name and its volume handle "vol-"+name.
func nodeName(n int) string             { return fmt.Sprintf("node-%04d", n) }
func podName(node string, p int) string { return fmt.Sprintf("%s-pod-%02d", node, p) }

// uniqueNameOfPV is the name a volume is listed under in node status.
func uniqueNameOfPV(pv string) string {
	return simulator.CSIUniqueName(Driver, "vol-"+pv[len("pv-"):])
}

// seedData returns an etcd data folder holding the seeded cluster, and a cleanup for it. With
// a SeedCache it reuses that size's folder when a complete one is there, else seeds it
// there; without, it seeds into a temporary folder. seeding is zero when reused.
func seedData(ctx context.Context, c Config) (dir string, cleanup func(), seeding time.Duration, err error) {
	name := fmt.Sprintf("%dx%d-v%d", c.Nodes, c.PodsPerNode, seedFormat)
	if c.SeedCache != "" {
		dir = filepath.Join(c.SeedCache, name)
		if _, err := os.Stat(filepath.Join(dir, seedComplete)); err == nil {
			fmt.Fprintf(c.Progress, "reusing the seeded cluster in %s\n", dir)
			return dir, func() {}, 0, nil
		}
		if err := os.MkdirAll(c.SeedCache, 0o755); err != nil {
			return "", nil, 0, fmt.Errorf("creating the seed cache %s: %w", c.SeedCache, err)
		}
		_ = os.RemoveAll(dir) // an incomplete earlier attempt
		cleanup = func() {}
	} else {
		parent, err := os.MkdirTemp("", "adc-bench-seed-")
		if err != nil {
			return "", nil, 0, fmt.Errorf("creating a folder for the seeded cluster: %w", err)
		}
		dir = filepath.Join(parent, name)
		cleanup = func() { _ = os.RemoveAll(parent) }
	}
	start := time.Now()
	if err := seedInto(ctx, c, dir); err != nil {
		cleanup()
		_ = os.RemoveAll(dir)
		return "", nil, 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, seedComplete), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		cleanup()
		return "", nil, 0, fmt.Errorf("marking the seed %s complete: %w", dir, err)
	}
	return dir, cleanup, time.Since(start), nil
}

// seedInto starts a control plane on the empty etcd folder dir, seeds it and stops it
// gracefully, so the folder holds the cluster for later control planes.
func seedInto(ctx context.Context, c Config, dir string) error {
	cp, stop, err := controlplane.StartWithOptions(controlplane.Options{EtcdDataDir: dir})
	if err != nil {
		return err
	}
	defer stop()
	client := kubernetes.NewForConfigOrDie(fastClient(cp.Config))
	fmt.Fprintf(c.Progress, "seeding %d nodes x %d pods (%d at once) ...\n", c.Nodes, c.PodsPerNode, c.SeedWorkers)
	start := time.Now()
	if err := seed(ctx, client, c); err != nil {
		return err
	}
	fmt.Fprintf(c.Progress, "seeded in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// fastClient is an admin client for the harness: protobuf, and a client budget far above
// what the API server can serve, so only the server limits the harness.
func fastClient(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 100000, 100000
	c.ContentType = runtime.ContentTypeProtobuf
	c.UserAgent = "adc-bench-harness"
	return c
}

// seed creates the nodes and, per node, pods with one bound CSI claim each, SeedWorkers
// creates at a time.
func seed(ctx context.Context, client kubernetes.Interface, c Config) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	kubelet := simulator.Kubelet{Client: client}
	p := newPool(ctx, c.SeedWorkers)
	for n := 0; n < c.Nodes; n++ {
		node := nodeName(n)
		p.do(func() error { _, err := kubelet.RegisterNode(ctx, node, true); return err })
	}
	if err := p.wait(); err != nil {
		return err
	}
	p = newPool(ctx, c.SeedWorkers)
	start := time.Now()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for n := 0; n < c.Nodes; n++ {
		node := nodeName(n)
		for i := 0; i < c.PodsPerNode; i++ {
			select {
			case <-tick.C:
				fmt.Fprintf(c.Progress, "  %6.1fs: %d/%d pods seeded\n", time.Since(start).Seconds(), n*c.PodsPerNode, c.Volumes())
			default:
			}
			name := podName(node, i)
			p.do(func() error { return seedPod(ctx, client, node, name) })
		}
	}
	return p.wait()
}

func seedPod(ctx context.Context, client kubernetes.Interface, node, name string) error {
	if _, err := simulator.BindNewClaim(ctx, client, Namespace, name, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: Driver, VolumeHandle: "vol-" + name}},
		},
	}); err != nil {
		return err
	}
	_, err := client.CoreV1().Pods(Namespace).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: v1.PodSpec{
			NodeName:   node,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", Namespace, name, err)
	}
	return nil
}

// pool runs functions with bounded parallelism and keeps the first error; after an error
// the rest are skipped.
type pool struct {
	ctx   context.Context
	sem   chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
}

func newPool(ctx context.Context, n int) *pool {
	return &pool{ctx: ctx, sem: make(chan struct{}, n)}
}

func (p *pool) do(f func() error) {
	p.wg.Add(1)
	p.sem <- struct{}{}
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		p.mu.Lock()
		failed := p.first != nil
		p.mu.Unlock()
		if failed || p.ctx.Err() != nil {
			return
		}
		if err := f(); err != nil {
			p.mu.Lock()
			if p.first == nil {
				p.first = err
			}
			p.mu.Unlock()
		}
	}()
}

func (p *pool) wait() error {
	p.wg.Wait()
	if p.first == nil && p.ctx.Err() != nil {
		return p.ctx.Err()
	}
	return p.first
}

// copyTree copies the folder src to dst (which must not exist), so each run starts from
// its own copy of the seeded etcd data.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	})
}
