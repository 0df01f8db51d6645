package scenario

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migration-aware/adc/pkg/adc"
)

// process is the controller under test running as a process of its own.
type process struct {
	cmd *exec.Cmd
	log *os.File
	// secureAddr is adc's secure port on 127.0.0.1, empty for kube-controller-manager.
	secureAddr string
	kubeconfig string
	exited     chan struct{}
}

// controllerCommand returns the command line of the controller under test: kube-controller-
// manager with only its attach/detach controller, or `adc controller`, both with the same
// client budget and leader election off. adc serves its secure port on secureAddr (as the
// Deployment does, delegated authentication and authorization included), with the profiles
// when a CPU profile is asked for.
func controllerCommand(c Config, kubeconfig, secureAddr string) (string, []string, error) {
	qps, burst := strconv.FormatFloat(c.QPS, 'f', -1, 64), strconv.Itoa(c.Burst)
	switch c.Controller {
	case KCM, KCMADC:
		bin, controller := c.KCMPath, "persistentvolume-attach-detach-controller"
		if c.Controller == KCMADC {
			bin, controller = c.KCMADCPath, adc.ControllerManagerName
		}
		if bin == "" {
			return "", nil, fmt.Errorf("no binary for controller %s: run `make kcm-assets` (kcm) or `make kcm-adc` (kcm-adc) and pass its path", c.Controller)
		}
		// Its FlexVolume prober creates --flex-volume-plugin-dir (default under /usr/libexec):
		// keep it next to the kubeconfig, in the run's own folder, not on the host.
		return bin, []string{"--kubeconfig", kubeconfig,
			"--controllers", controller, "--leader-elect=false", "--secure-port=0",
			"--flex-volume-plugin-dir", filepath.Join(filepath.Dir(kubeconfig), "flexvolume"),
			"--kube-api-qps", qps, "--kube-api-burst", burst, "-v", "0"}, nil
	case ADC:
		if c.ADCPath == "" {
			return "", nil, errors.New("no adc binary: run `make build` and pass bin/adc")
		}
		host, port, err := net.SplitHostPort(secureAddr)
		if err != nil {
			return "", nil, fmt.Errorf("adc's secure address %q: %w", secureAddr, err)
		}
		args := []string{"controller", "--kubeconfig", kubeconfig, "--leader-elect=false",
			"--kube-api-qps", qps, "--kube-api-burst", burst, "--bind-address", host, "--secure-port", port, "-v", "0"}
		if c.CPUProfile != "" || c.HeapProfile != "" {
			args = append(args, "--profiling")
		}
		return c.ADCPath, append(args, c.ADCFlags...), nil
	}
	return "", nil, fmt.Errorf("controller %q does not run as a process", c.Controller)
}

// startProcess starts the controller, its output going to logPath.
func startProcess(c Config, kubeconfig, logPath string) (*process, error) {
	var addr string
	if c.Controller == ADC {
		var err error
		if addr, err = freeLocalAddr(); err != nil {
			return nil, err
		}
	}
	bin, args, err := controllerCommand(c, kubeconfig, addr)
	if err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the controller log %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, log: log, secureAddr: addr, kubeconfig: kubeconfig, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// running fails once the controller has exited before it was asked to.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited early (%s); see its log %s", p.cmd.Path, p.cmd.ProcessState, p.log.Name())
	default:
		return nil
	}
}

// stop asks the controller to stop (SIGTERM) and kills it after a grace period.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.log.Close()
}

// freeLocalAddr returns a loopback address with a port free right now, for adc's listener.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for adc's secure port: %w", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr, nil
}

// fetchProfile fetches one of adc's profiles (page: "profile?seconds=20", "heap") from
// /debug/pprof/ on its secure port into path, once adc accepts the credentials of kubeconfig
// (the benchmark's admin, whom adc's delegated authorization allows /debug/*).
func fetchProfile(ctx context.Context, addr, kubeconfig, page, path string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s for the profile's credentials: %w", kubeconfig, err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return fmt.Errorf("the credentials of %s: %w", kubeconfig, err)
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	// adc's certificate is self-signed, made in memory at start.
	tlsCfg.InsecureSkipVerify, tlsCfg.RootCAs = true, nil
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	get := func(ctx context.Context, url string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if cfg.BearerToken != "" {
			req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
		}
		return client.Do(req)
	}
	// The port opens before adc has read the client CA from the cluster
	// (extension-apiserver-authentication): until then the benchmark's client certificate
	// is refused with a 401. A cheap authenticated page says when the profile would be served.
	ready := fmt.Sprintf("https://%s/debug/pprof/cmdline", addr)
	var last string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := get(ctx, ready)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for adc's secure port on %s to serve %s (last: %s; is --profiling on?): %w", addr, ready, last, err)
	}
	url := fmt.Sprintf("https://%s/debug/pprof/%s", addr, page)
	resp, err := get(ctx, url)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetching %s: %s: %s", url, resp.Status, body)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Close()
}

// klogError matches klog's error lines: "E1123 10:00:00.000000 ...", month, day and local time.
var klogError = regexp.MustCompile(`^E(\d{4} \d{2}:\d{2}:\d{2}\.\d{6}) `)

// countLogErrors counts klog error lines in the log at path logged before until, so that
// what a controller logs while it is being stopped (requests cancelled mid-flight) does not
// count.
func countLogErrors(path string, until time.Time) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 4<<20)
	for sc.Scan() {
		m := klogError.FindSubmatch(sc.Bytes())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s", until.Year(), m[1]), time.Local)
		if err != nil || at.Before(until) {
			n++
		}
	}
	return n
}

// waitStable waits until the file at path stops growing (the API server writes the audit
// events of the controller's watches once it sees them closed), at most limit.
func waitStable(path string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	var last int64 = -1
	for time.Now().Before(deadline) {
		info, err := os.Stat(path)
		if err == nil && info.Size() == last {
			return
		}
		if err == nil {
			last = info.Size()
		}
		time.Sleep(500 * time.Millisecond)
	}
}
