package plan

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// Clients are the API clients Build reads through. Interfaces, so that unit tests can pass
// fakes and the integration test a real control plane.
type Clients struct {
	// Kube lists pods, claims, volumes, nodes, CSINodes and CSIDrivers.
	Kube kubernetes.Interface
	// Dynamic lists CSINodeInfos (a CRD without a typed client). May be nil, which behaves as
	// if the CRD were not installed.
	Dynamic dynamic.Interface
}

// Build lists everything a plan needs with one List call per resource and returns the
// report. It only reads. CSINodeInfos are listed only when the node source can use them
// (csinodeinfo or auto); a missing CRD counts as no CSINodeInfos, so `adc plan` works on
// clusters that never installed it.
func Build(ctx context.Context, c Clients, cfg migration.Config) (Report, error) {
	if c.Kube == nil {
		return Report{}, fmt.Errorf("building plan: no Kubernetes client")
	}
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("building plan: %w", err)
	}
	logger := klog.FromContext(ctx)
	core, storage := c.Kube.CoreV1(), c.Kube.StorageV1()

	// Only scheduled pods matter; the API server filters, and FromObjects filters again for
	// servers (and fakes) that ignore the selector.
	pods, err := core.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return Report{}, listErr("pods", err)
	}
	pvcs, err := core.PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, listErr("persistentvolumeclaims", err)
	}
	pvs, err := core.PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, listErr("persistentvolumes", err)
	}
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, listErr("nodes", err)
	}
	csiNodes, err := storage.CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, listErr("csinodes.storage.k8s.io", err)
	}
	drivers, err := storage.CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, listErr("csidrivers.storage.k8s.io", err)
	}
	var infos []csinodeinfo.CSINodeInfo
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		infos, err = listCSINodeInfos(ctx, c.Dynamic)
		if err != nil {
			return Report{}, err
		}
	}
	logger.V(2).Info("Listed objects for plan", "pods", len(pods.Items), "persistentVolumeClaims", len(pvcs.Items),
		"persistentVolumes", len(pvs.Items), "nodes", len(nodes.Items), "csiNodes", len(csiNodes.Items),
		"csiDrivers", len(drivers.Items), "csiNodeInfos", len(infos), "config", cfg.String())

	return FromObjects(cfg, pods.Items, migration.Objects{
		PVCs:         pvcs.Items,
		PVs:          pvs.Items,
		CSIDrivers:   drivers.Items,
		CSINodes:     csiNodes.Items,
		CSINodeInfos: infos,
		Nodes:        nodes.Items,
	}), nil
}

// listCSINodeInfos lists the seed-API objects. A missing CRD (NotFound, or a REST mapping
// with no match) means none exist.
func listCSINodeInfos(ctx context.Context, dyn dynamic.Interface) ([]csinodeinfo.CSINodeInfo, error) {
	logger := klog.FromContext(ctx)
	if dyn == nil {
		logger.V(1).Info("No dynamic client; treating CSINodeInfos as absent")
		return nil, nil
	}
	list, err := dyn.Resource(csinodeinfo.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		logger.V(1).Info("CSINodeInfo CRD is not installed; treating CSINodeInfos as absent", "resource", csinodeinfo.GroupVersionResource.String())
		return nil, nil
	}
	if err != nil {
		return nil, listErr(csinodeinfo.GroupVersionResource.GroupResource().String(), err)
	}
	infos := make([]csinodeinfo.CSINodeInfo, 0, len(list.Items))
	for i := range list.Items {
		info, err := csinodeinfo.FromUnstructured(&list.Items[i])
		if err != nil {
			return nil, fmt.Errorf("reading CSINodeInfos: %w", err)
		}
		infos = append(infos, *info)
	}
	return infos, nil
}

func listErr(resource string, err error) error {
	hint := "check the API server is reachable and the kubeconfig's user may list " + resource + " cluster-wide"
	if apierrors.IsForbidden(err) {
		hint = "grant the kubeconfig's user list permission on " + resource + " cluster-wide (adc plan only reads)"
	}
	return fmt.Errorf("listing %s: %w; %s", resource, err, hint)
}
