package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// migrationFlags are --migration, --node-migration-source and --driver-info-source, which
// controller, plan and status share so that a dry run decides exactly as the controller would.
type migrationFlags struct {
	modes        string
	nodeSource   string
	driverSource string
}

func (m *migrationFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&m.modes, "migration", "", "Per in-tree plugin migration mode laid over the default (all "+migration.ModeOn.String()+
		"), e.g. kubernetes.io/portworx-volume=complete,kubernetes.io/gce-pd=off; modes: off, on, complete; plugins: "+strings.Join(migration.MigratablePlugins, ", ")+".")
	fs.StringVar(&m.nodeSource, "node-migration-source", string(migration.NodeSourceCSINode), "Where node migration state is read: csinode, csinodeinfo (seed API) or auto.")
	fs.StringVar(&m.driverSource, "driver-info-source", string(migration.DriverSourceCSIDriver), "Where a CSI driver's attachRequired is read: csidriver (storage.k8s.io/v1; unset means true), seed (csi.storage.k8s.io/v1alpha1; unset means false) or auto (the v1 object if it exists, else the seed one). No object means attach required.")
}

// config parses the flags into a migration config, with errors that name the flag.
func (m *migrationFlags) config() (migration.Config, error) {
	modes, err := migration.ParseModes(m.modes)
	if err != nil {
		return migration.Config{}, fmt.Errorf("--migration: %w", err)
	}
	source, err := migration.ParseNodeSource(m.nodeSource)
	if err != nil {
		return migration.Config{}, fmt.Errorf("--node-migration-source: %w", err)
	}
	driverSource, err := migration.ParseDriverSource(m.driverSource)
	if err != nil {
		return migration.Config{}, fmt.Errorf("--driver-info-source: %w", err)
	}
	cfg := migration.DefaultConfig().WithModes(modes)
	cfg.NodeSource = source
	cfg.DriverSource = driverSource
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
