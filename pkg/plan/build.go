package plan

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// Clients are the API clients Build reads through. Interfaces, so that unit tests can pass
// fakes and the integration test a real control plane.
type Clients struct {
	// Kube lists pods, claims, volumes, nodes, CSINodes and CSIDrivers.
	Kube kubernetes.Interface
	// Dynamic lists CSINodeInfos and seed-API CSIDrivers (CRDs without a typed client). May
	// be nil, which behaves as if the CRDs were not installed.
	Dynamic dynamic.Interface
}

// Cluster is one read of everything a cluster-wide decision view needs: the scheduled pods,
// the objects decisions are made from and, when asked for, the VolumeAttachments.
type Cluster struct {
	Pods              []v1.Pod
	Objects           migration.Objects
	VolumeAttachments []storagev1.VolumeAttachment
	// DetachPolicies decide the detaches of nodes that are not Ready; none when the CRD is
	// not installed or may not be read.
	DetachPolicies []detachv1alpha1.DetachPolicy
}

// ListCluster lists, with one List call per resource, what `adc plan` and `adc status` need.
// It only reads. CSINodeInfos are listed only when the node source can use them (csinodeinfo
// or auto), seed-API CSIDrivers only when the driver-info source can (seed or auto); a missing
// CRD counts as no such objects, so it works on clusters that never installed it. VolumeAttachments are listed only when withAttachments is set.
func ListCluster(ctx context.Context, c Clients, cfg migration.Config, withAttachments bool) (Cluster, error) {
	var out Cluster
	if c.Kube == nil {
		return out, fmt.Errorf("listing the cluster: no Kubernetes client")
	}
	if err := cfg.Validate(); err != nil {
		return out, fmt.Errorf("listing the cluster: %w", err)
	}
	logger := klog.FromContext(ctx)
	core, storage := c.Kube.CoreV1(), c.Kube.StorageV1()

	// Only scheduled pods matter; the API server filters, and FromObjects filters again for
	// servers (and fakes) that ignore the selector.
	pods, err := core.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return out, listErr("pods", err)
	}
	pvcs, err := core.PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("persistentvolumeclaims", err)
	}
	pvs, err := core.PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("persistentvolumes", err)
	}
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("nodes", err)
	}
	csiNodes, err := storage.CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("csinodes.storage.k8s.io", err)
	}
	drivers, err := storage.CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("csidrivers.storage.k8s.io", err)
	}
	if withAttachments {
		vas, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, listErr("volumeattachments.storage.k8s.io", err)
		}
		out.VolumeAttachments = vas.Items
	}
	if out.DetachPolicies, err = ListDetachPolicies(ctx, c.Dynamic); err != nil {
		return out, err
	}
	var infos []csinodeinfo.CSINodeInfo
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		infos, err = listCSINodeInfos(ctx, c.Dynamic)
		if err != nil {
			return out, err
		}
	}
	var seedDrivers []seedcsidriver.CSIDriver
	if cfg.DriverSource.ReadsSeed() {
		seedDrivers, err = listSeedCSIDrivers(ctx, c.Dynamic, cfg.DriverSource)
		if err != nil {
			return out, err
		}
	}
	logger.V(2).Info("Listed cluster objects", "pods", len(pods.Items), "persistentVolumeClaims", len(pvcs.Items),
		"persistentVolumes", len(pvs.Items), "nodes", len(nodes.Items), "csiNodes", len(csiNodes.Items),
		"csiDrivers", len(drivers.Items), "seedCSIDrivers", len(seedDrivers), "csiNodeInfos", len(infos), "volumeAttachments", len(out.VolumeAttachments), "config", cfg.String())
	out.Pods = pods.Items
	out.Objects = migration.Objects{
		PVCs:         pvcs.Items,
		PVs:          pvs.Items,
		CSIDrivers:   drivers.Items,
		CSINodes:     csiNodes.Items,
		CSINodeInfos: infos,
		Nodes:        nodes.Items,

		SeedCSIDrivers: seedDrivers,
	}
	return out, nil
}

// Build lists the cluster (ListCluster) and returns the plan report. It only reads.
func Build(ctx context.Context, c Clients, cfg migration.Config) (Report, error) {
	cl, err := ListCluster(ctx, c, cfg, false)
	if err != nil {
		return Report{}, fmt.Errorf("building plan: %w", err)
	}
	r := FromObjects(cfg, cl.Pods, cl.Objects)
	r.NodeLoss = NodeLossFromObjects(cl.Objects, cl.DetachPolicies, DefaultMaxWaitForUnmount, time.Now())
	if len(r.NodeLoss) == 0 {
		r.NodeLoss = nil
	}
	return r, nil
}

// DefaultMaxWaitForUnmount is the controller's default --max-wait-for-unmount (upstream's
// six minutes), the built-in rule's timeout in plan's and status's node-loss rows.
const DefaultMaxWaitForUnmount = 6 * time.Minute

// listCSINodeInfos lists the seed-API CSINodeInfos. A missing CRD (NotFound, or a REST
// mapping with no match) means none exist.
func listCSINodeInfos(ctx context.Context, dyn dynamic.Interface) ([]csinodeinfo.CSINodeInfo, error) {
	logger := klog.FromContext(ctx)
	return listSeed(ctx, dyn, csinodeinfo.GroupVersionResource, "CSINodeInfos", csinodeinfo.FromUnstructured, func(crdMissing bool) {
		if crdMissing {
			logger.V(1).Info("CSINodeInfo CRD is not installed; treating CSINodeInfos as absent", "resource", csinodeinfo.GroupVersionResource.String())
		} else {
			logger.V(1).Info("No dynamic client; treating CSINodeInfos as absent")
		}
	})
}

// listSeedCSIDrivers lists the seed-API CSIDrivers. A missing CRD means none exist, which
// source then reads as "no object, attach required"; it is said once, at Info level, because
// it changes decisions the operator asked for with --driver-info-source.
func listSeedCSIDrivers(ctx context.Context, dyn dynamic.Interface, source migration.DriverSource) ([]seedcsidriver.CSIDriver, error) {
	logger := klog.FromContext(ctx).WithValues("resource", seedcsidriver.GroupVersionResource.String(), "driverInfoSource", source)
	return listSeed(ctx, dyn, seedcsidriver.GroupVersionResource, "seed CSIDrivers", seedcsidriver.FromUnstructured, func(crdMissing bool) {
		if crdMissing {
			logger.Info("Seed CSIDriver CRD is not installed; every CSI driver without a storage.k8s.io/v1 CSIDriver counts as having no CSIDriver object (attach required)")
		} else {
			logger.Info("No dynamic client; treating seed CSIDrivers as absent (attach required unless a storage.k8s.io/v1 CSIDriver says otherwise)")
		}
	})
}

// ListDetachPolicies lists the DetachPolicies. A missing CRD, or a role that may not read
// them, means none: the built-in rule then applies, as it would in the controller.
func ListDetachPolicies(ctx context.Context, dyn dynamic.Interface) ([]detachv1alpha1.DetachPolicy, error) {
	logger := klog.FromContext(ctx).WithValues("resource", detachv1alpha1.GroupVersionResource.String())
	policies, err := listSeed(ctx, dyn, detachv1alpha1.GroupVersionResource, "DetachPolicies", detachv1alpha1.FromUnstructured, func(bool) {
		logger.V(1).Info("DetachPolicies are not available; the built-in detach rule applies to every volume")
	})
	if apierrors.IsForbidden(err) {
		logger.Info("Not allowed to list DetachPolicies; showing the built-in detach rule for every volume", "err", err.Error())
		return nil, nil
	}
	return policies, err
}

// listSeed lists one seed-API resource through the dynamic client and converts each object;
// with no dynamic client, or no CRD served, it says so through absent and returns none.
func listSeed[T any](ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, what string,
	convert func(*unstructured.Unstructured) (*T, error), absent func(crdMissing bool)) ([]T, error) {
	if dyn == nil {
		absent(false)
		return nil, nil
	}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		absent(true)
		return nil, nil
	}
	if err != nil {
		return nil, listErr(gvr.GroupResource().String(), err)
	}
	out := make([]T, 0, len(list.Items))
	for i := range list.Items {
		obj, err := convert(&list.Items[i])
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		out = append(out, *obj)
	}
	return out, nil
}

func listErr(resource string, err error) error {
	hint := "check the API server is reachable and the kubeconfig's user may list " + resource + " cluster-wide"
	if apierrors.IsForbidden(err) {
		hint = "grant the kubeconfig's user list permission on " + resource + " cluster-wide (adc plan and adc status only read)"
	}
	return fmt.Errorf("listing %s: %w; %s", resource, err, hint)
}
