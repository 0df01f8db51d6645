package plan

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// Reader is where a cluster read comes from: the API server (Clients) for the commands, or a
// running controller's informer caches for its dashboard, so that a page asked for by anyone
// with dashboard access costs the API server nothing. Every read tool (plan, status,
// preflight, rollout, explain) goes through ReadCluster over a Reader, so they all see the
// same objects the same way. Implementations must be safe for concurrent use.
type Reader interface {
	// Pods lists the pods of namespace (all namespaces when empty); scheduledOnly leaves
	// out the pods no node was chosen for.
	Pods(ctx context.Context, namespace string, scheduledOnly bool) ([]v1.Pod, error)
	// PersistentVolumeClaims lists the claims of namespace (all namespaces when empty).
	PersistentVolumeClaims(ctx context.Context, namespace string) ([]v1.PersistentVolumeClaim, error)
	// PersistentVolumes lists the named volumes (distinct; a name that does not exist is left
	// out), or all of them when names is nil.
	PersistentVolumes(ctx context.Context, names []string) ([]v1.PersistentVolume, error)
	// ClusterObjects lists what any decision may read whatever the pod: nodes, CSINodes,
	// CSIDrivers, the seed-API objects cfg's sources read, the DetachPolicies and, when
	// asked, the VolumeAttachments. The Objects' PVCs and PVs are left empty.
	ClusterObjects(ctx context.Context, cfg migration.Config, withAttachments bool) (ClusterObjects, error)
}

// ClusterObjects are the cluster-scoped objects of a read, apart from the volumes.
type ClusterObjects struct {
	Objects           migration.Objects
	VolumeAttachments []storagev1.VolumeAttachment
	DetachPolicies    []detachv1alpha1.DetachPolicy
}

// Scope narrows a read to what its tool needs: `adc plan` reads every scheduled pod, an
// explanation one namespace and the volumes its claims name.
type Scope struct {
	// Namespace limits pods and claims to one namespace, and volumes to those its claims
	// (and PVs) name; empty reads every namespace and every volume.
	Namespace string
	// NoPods reads no pods or claims at all (a volume no claim is bound to).
	NoPods bool
	// Unscheduled also reads pods no node was chosen for (why a pending pod waits).
	Unscheduled bool
	// PVs are volumes read whatever the claims say (the volume an explanation is about).
	PVs []string
	// VolumeAttachments reads them too.
	VolumeAttachments bool
}

// ReadCluster reads, through r, what a decision view of scope needs. It only reads. A missing
// seed-API CRD counts as no such objects, so it works on clusters that never installed one.
func ReadCluster(ctx context.Context, r Reader, cfg migration.Config, scope Scope) (Cluster, error) {
	var out Cluster
	if err := cfg.Validate(); err != nil {
		return out, fmt.Errorf("reading the cluster: %w", err)
	}
	var err error
	if !scope.NoPods {
		if out.Pods, err = r.Pods(ctx, scope.Namespace, !scope.Unscheduled); err != nil {
			return out, err
		}
		if out.Objects.PVCs, err = r.PersistentVolumeClaims(ctx, scope.Namespace); err != nil {
			return out, err
		}
	}
	var names []string
	if scope.Namespace != "" || scope.NoPods {
		names = []string{}
		seen := map[string]bool{}
		for _, n := range scope.PVs {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		for i := range out.Objects.PVCs {
			if n := out.Objects.PVCs[i].Spec.VolumeName; n != "" && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	pvs, err := r.PersistentVolumes(ctx, names)
	if err != nil {
		return out, err
	}
	co, err := r.ClusterObjects(ctx, cfg, scope.VolumeAttachments)
	if err != nil {
		return out, err
	}
	claims := out.Objects.PVCs
	out.Objects = co.Objects
	out.Objects.PVCs, out.Objects.PVs = claims, pvs
	out.VolumeAttachments, out.DetachPolicies = co.VolumeAttachments, co.DetachPolicies
	klog.FromContext(ctx).V(2).Info("Read the cluster", "namespace", scope.Namespace, "pods", len(out.Pods),
		"persistentVolumeClaims", len(out.Objects.PVCs), "persistentVolumes", len(out.Objects.PVs), "nodes", len(out.Objects.Nodes),
		"csiNodes", len(out.Objects.CSINodes), "csiDrivers", len(out.Objects.CSIDrivers), "seedCSIDrivers", len(out.Objects.SeedCSIDrivers),
		"csiNodeInfos", len(out.Objects.CSINodeInfos), "volumeAttachments", len(out.VolumeAttachments), "config", cfg.String())
	return out, nil
}

// Clients are the API clients a Reader of the API server reads through: one List call per
// resource, and one per named volume. Interfaces, so that unit tests can pass fakes and the
// integration test a real control plane.
type Clients struct {
	// Kube lists pods, claims, volumes, nodes, CSINodes and CSIDrivers.
	Kube kubernetes.Interface
	// Dynamic lists CSINodeInfos and seed-API CSIDrivers (CRDs without a typed client). May
	// be nil, which behaves as if the CRDs were not installed.
	Dynamic dynamic.Interface
}

var _ Reader = Clients{}

func (c Clients) kube() (kubernetes.Interface, error) {
	if c.Kube == nil {
		return nil, fmt.Errorf("reading the cluster: no Kubernetes client")
	}
	return c.Kube, nil
}

// Pods implements Reader. The API server filters unscheduled pods out; FromObjects filters
// again for servers (and fakes) that ignore the selector.
func (c Clients) Pods(ctx context.Context, namespace string, scheduledOnly bool) ([]v1.Pod, error) {
	kube, err := c.kube()
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{}
	if scheduledOnly {
		opts.FieldSelector = "spec.nodeName!="
	}
	pods, err := kube.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, listErr("pods", namespace, err)
	}
	return pods.Items, nil
}

// PersistentVolumeClaims implements Reader.
func (c Clients) PersistentVolumeClaims(ctx context.Context, namespace string) ([]v1.PersistentVolumeClaim, error) {
	kube, err := c.kube()
	if err != nil {
		return nil, err
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, listErr("persistentvolumeclaims", namespace, err)
	}
	return pvcs.Items, nil
}

// PersistentVolumes implements Reader: named volumes are listed one by one with a field
// selector (a list, not a get, so the list permission the other reads need is enough).
func (c Clients) PersistentVolumes(ctx context.Context, names []string) ([]v1.PersistentVolume, error) {
	kube, err := c.kube()
	if err != nil {
		return nil, err
	}
	if names == nil {
		pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, listErr("persistentvolumes", "", err)
		}
		return pvs.Items, nil
	}
	var out []v1.PersistentVolume
	for _, name := range names {
		pvs, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return nil, listErr("persistentvolumes", "", err)
		}
		out = append(out, pvs.Items...)
	}
	return out, nil
}

// ClusterObjects implements Reader. CSINodeInfos are listed only when the node source can
// use them (csinodeinfo or auto), seed-API CSIDrivers only when the driver-info source can
// (seed or auto).
func (c Clients) ClusterObjects(ctx context.Context, cfg migration.Config, withAttachments bool) (ClusterObjects, error) {
	var out ClusterObjects
	kube, err := c.kube()
	if err != nil {
		return out, err
	}
	core, storage := kube.CoreV1(), kube.StorageV1()
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("nodes", "", err)
	}
	csiNodes, err := storage.CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("csinodes.storage.k8s.io", "", err)
	}
	drivers, err := storage.CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, listErr("csidrivers.storage.k8s.io", "", err)
	}
	out.Objects.Nodes, out.Objects.CSINodes, out.Objects.CSIDrivers = nodes.Items, csiNodes.Items, drivers.Items
	if withAttachments {
		vas, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, listErr("volumeattachments.storage.k8s.io", "", err)
		}
		out.VolumeAttachments = vas.Items
	}
	if out.DetachPolicies, err = ListDetachPolicies(ctx, c.Dynamic); err != nil {
		return out, err
	}
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		if out.Objects.CSINodeInfos, err = listCSINodeInfos(ctx, c.Dynamic); err != nil {
			return out, err
		}
	}
	if cfg.DriverSource.ReadsSeed() {
		if out.Objects.SeedCSIDrivers, err = listSeedCSIDrivers(ctx, c.Dynamic, cfg.DriverSource); err != nil {
			return out, err
		}
	}
	return out, nil
}

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
		return nil, listErr(gvr.GroupResource().String(), "", err)
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

// listErr says which permission a failed list needs, so that an operator with a narrow role
// knows what to ask for (the read tools only ever read).
func listErr(resource, namespace string, err error) error {
	where := " cluster-wide"
	if namespace != "" {
		where = " in namespace " + namespace
	}
	hint := "check the API server is reachable and the kubeconfig's user may list " + resource + where
	if apierrors.IsForbidden(err) {
		hint = "grant the kubeconfig's user list permission on " + resource + where + " (adc's read tools only read)"
	}
	return fmt.Errorf("listing %s: %w; %s", resource, err, strings.TrimSpace(hint))
}
