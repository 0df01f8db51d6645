// Command up is `make cluster`: a whole cluster on this machine (package cluster) in one of
// its three modes, with a default StorageClass of pre-created PersistentVolumes of the mock
// CSI driver, so that `kubectl apply` of a StatefulSet works at once. It prints the kubeconfig
// and what runs, stays up until Ctrl-C, then stops everything and checks that nothing is left
// behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/e2e/cluster"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// options are the command line's.
type options struct {
	mode          string
	nodes         int
	pvs           int
	adc           string
	kubeconfigOut string
	out           io.Writer
}

func main() {
	o := options{out: os.Stdout}
	flag.StringVar(&o.mode, "mode", string(cluster.KCMADC), "Attach/detach controller: kcm-adc (adc inside kube-controller-manager), stock (kube-controller-manager's own) or standalone (adc as its own process).")
	flag.IntVar(&o.nodes, "nodes", 3, "Number of nodes (hollow kubelets), in zones zone-a and zone-b alternately.")
	flag.IntVar(&o.pvs, "pvs", 20, "Number of 1Gi ReadWriteOnce PersistentVolumes of the mock driver in the default StorageClass \"mock\".")
	flag.StringVar(&o.adc, "adc", "bin/adc", "The adc binary, for the standalone mode (make build).")
	flag.StringVar(&o.kubeconfigOut, "kubeconfig-out", "bin/cluster/kubeconfig", "Where to write the admin kubeconfig (removed on exit).")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "cluster: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	mode, err := cluster.ParseMode(o.mode)
	if err != nil {
		return err
	}
	if o.nodes < 1 {
		return fmt.Errorf("--nodes must be at least 1, got %d", o.nodes)
	}
	assets, err := cluster.FindAssets()
	if err != nil {
		return err
	}
	co := cluster.Options{Mode: mode, Assets: assets, NodeLabels: map[string]map[string]string{}, Log: os.Stderr}
	if mode == cluster.Standalone {
		if co.ADCBinary, err = filepath.Abs(o.adc); err != nil {
			return err
		}
	}
	gce := harness.DriverOptions{Name: harness.GCEPDDriver, Topology: map[string]map[string]string{}}
	for i := range o.nodes {
		n := fmt.Sprintf("node-%d", i+1)
		zone := []string{"zone-a", "zone-b"}[i%2]
		co.Nodes = append(co.Nodes, n)
		co.NodeLabels[n] = map[string]string{v1.LabelTopologyZone: zone}
		gce.Topology[n] = map[string]string{"topology.gke.io/zone": zone}
	}
	co.Drivers = []harness.DriverOptions{{Name: harness.DefaultDriver}, gce}

	start := time.Now()
	s, err := cluster.Start(ctx, co)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(o.out, "\nstopping")
		err = errors.Join(err, s.Stop())
		if o.kubeconfigOut != "" {
			_ = os.Remove(o.kubeconfigOut)
		}
		if left := s.Leftovers(); len(left) > 0 {
			err = errors.Join(err, fmt.Errorf("left behind: %s", strings.Join(left, "; ")))
		} else if err == nil {
			fmt.Fprintln(o.out, "stopped; nothing left behind (processes, folders, ports, mounts, iptables checked)")
		}
	}()
	if err := seedVolumes(ctx, s.Client, o.pvs); err != nil {
		return err
	}
	kubeconfig := s.Kubeconfig()
	if o.kubeconfigOut != "" {
		if err := copyFile(kubeconfig, o.kubeconfigOut); err != nil {
			return err
		}
		kubeconfig, _ = filepath.Abs(o.kubeconfigOut)
	}
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	fmt.Fprintf(o.out, "\ncluster up in %s, mode %s: %s\n", time.Since(start).Round(100*time.Millisecond), mode, mode.Describe())
	fmt.Fprintf(o.out, "  kube-apiserver + etcd, kube-scheduler, kube-controller-manager (--controllers=%s)\n", mode.Controllers())
	fmt.Fprintf(o.out, "  %d hollow kubelets (%s), the mock CSI driver %s and %s (zonal), a csi-attacher each\n", o.nodes, strings.Join(co.Nodes, ", "), harness.DefaultDriver, harness.GCEPDDriver)
	fmt.Fprintf(o.out, "  the cloud node lifecycle controller (k8s.io/cloud-provider) in this process, with a test cloud in which every machine runs\n")
	fmt.Fprintf(o.out, "  default StorageClass \"mock\": %d pre-created PVs the PV controller binds to claims\n", o.pvs)
	fmt.Fprintf(o.out, "  adc's DetachPolicy CRD (deploy/crds; kubectl get detachpolicies), no policy: the built-in detach rule\n")
	fmt.Fprintf(o.out, "  logs in %s\n", filepath.Join(s.Dir, "logs"))
	fmt.Fprintf(o.out, "\n%s\n", b)
	fmt.Fprintf(o.out, "export KUBECONFIG=%s\n", kubeconfig)
	fmt.Fprintf(o.out, "kubectl get nodes; kubectl apply -f <a StatefulSet with a volumeClaimTemplate>\n")
	fmt.Fprintf(o.out, "Ctrl-C stops it.\n")
	<-ctx.Done()
	return nil
}

// seedVolumes creates the default StorageClass "mock" and n PVs of the mock driver in it.
func seedVolumes(ctx context.Context, client kubernetes.Interface, n int) error {
	if err := cluster.CreateStorageClass(ctx, client, "mock"); err != nil {
		return err
	}
	sc, err := client.StorageV1().StorageClasses().Get(ctx, "mock", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading StorageClass mock: %w", err)
	}
	sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	if _, err := client.StorageV1().StorageClasses().Update(ctx, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("making StorageClass mock the default: %w", err)
	}
	for i := range n {
		pv := cluster.PV{Name: fmt.Sprintf("mock-pv-%d", i), Class: "mock", Driver: harness.DefaultDriver, Handle: fmt.Sprintf("mock-vol-%d", i)}
		if _, err := cluster.CreatePV(ctx, client, pv); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", to, err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	return nil
}
