package main

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migration-aware/adc/pkg/plan"
)

// restConfig loads a kubeconfig file, or the in-cluster config when path is empty (as
// `kubectl adc`, kubectl's loading rules and --context instead: kubectlFlags), and sets the
// client rate limits (qps <= 0 keeps client-go's defaults).
func restConfig(path string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if plugin != nil {
		if cfg, err = plugin.clientConfig(path).ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig as kubectl does (--kubeconfig, $KUBECONFIG, ~/.kube/config; --context): %w", err)
		}
	} else if path == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
	}
	if qps > 0 {
		cfg.QPS = qps
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	return cfg, nil
}

// readClients builds the clients of a read-only command (plan, status). An empty kubeconfig
// means the in-cluster configuration; client-go's default rate limits are plenty for a
// handful of lists.
func readClients(kubeconfig, userAgent string) (plan.Clients, error) {
	cfg, err := restConfig(kubeconfig, 0, 0)
	if err != nil {
		return plan.Clients{}, err
	}
	cfg.UserAgent = userAgent
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return plan.Clients{}, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return plan.Clients{}, fmt.Errorf("creating the dynamic client: %w", err)
	}
	return plan.Clients{Kube: kube, Dynamic: dyn}, nil
}
