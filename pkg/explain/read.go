package explain

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	seedcsidriver "github.com/migration-aware/adc/pkg/apis/csidriver/v1alpha1"
	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// Cluster is what an explanation reads: the pods of the target's namespace, its claims, the
// PersistentVolumes they name, and every node, CSINode, CSIDriver and VolumeAttachment (a
// ReadWriteOnce volume may be held by any node).
type Cluster struct {
	// Pods are the pods of the target's namespace.
	Pods []v1.Pod
	// Objects are the objects decisions are made from.
	Objects migration.Objects
	// VolumeAttachments are all of them.
	VolumeAttachments []storagev1.VolumeAttachment
	// DetachPolicies decide the forced detaches (none: the built-in rule).
	DetachPolicies []detachv1alpha1.DetachPolicy
}

// ErrNotFound is wrapped by Read when the target does not exist.
var ErrNotFound = fmt.Errorf("not found")

// Read reads what explaining target needs; it only reads, with list calls the controller's
// own role allows (list on pods, claims, volumes, nodes, CSINodes, CSIDrivers,
// VolumeAttachments and the seed APIs), so the dashboard of a running controller can serve
// it too. A target that does not exist is an error wrapping ErrNotFound.
func Read(ctx context.Context, c plan.Clients, cfg migration.Config, t Target) (Cluster, error) {
	var out Cluster
	if c.Kube == nil {
		return out, fmt.Errorf("explaining %s: no Kubernetes client", t)
	}
	core := c.Kube.CoreV1()
	ns := t.Namespace
	if t.Kind == KindPV {
		pvs, err := core.PersistentVolumes().List(ctx, byName(t.Name))
		if err != nil {
			return out, readErr("persistentvolumes", err)
		}
		if len(pvs.Items) == 0 {
			return out, fmt.Errorf("explaining %s: PersistentVolume %q %w; list them with kubectl get pv", t, t.Name, ErrNotFound)
		}
		out.Objects.PVs = pvs.Items
		ref := pvs.Items[0].Spec.ClaimRef
		if ref == nil {
			return out, readRest(ctx, c, cfg, &out)
		}
		ns = ref.Namespace
	}
	pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, readErr("pods", err)
	}
	out.Pods = pods.Items
	if t.Kind == KindPod && findPod(out.Pods, t.Namespace, t.Name) == nil {
		return out, fmt.Errorf("explaining %s: pod %s/%s %w; list them with kubectl get pods -n %s", t, t.Namespace, t.Name, ErrNotFound, t.Namespace)
	}
	pvcs, err := core.PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, readErr("persistentvolumeclaims", err)
	}
	out.Objects.PVCs = pvcs.Items
	have := map[string]bool{}
	for _, pv := range out.Objects.PVs {
		have[pv.Name] = true
	}
	for _, pvc := range pvcs.Items {
		if name := pvc.Spec.VolumeName; name != "" && !have[name] {
			have[name] = true
			pvs, err := core.PersistentVolumes().List(ctx, byName(name))
			if err != nil {
				return out, readErr("persistentvolumes", err)
			}
			out.Objects.PVs = append(out.Objects.PVs, pvs.Items...)
		}
	}
	return out, readRest(ctx, c, cfg, &out)
}

// readRest reads the cluster-wide objects: nodes, CSINodes, CSIDrivers, VolumeAttachments
// and the seed-API objects the sources read.
func readRest(ctx context.Context, c plan.Clients, cfg migration.Config, out *Cluster) error {
	core, storage := c.Kube.CoreV1(), c.Kube.StorageV1()
	// Served from the API server's watch cache: a diagnostic need not cost a quorum read of
	// every node.
	cached := metav1.ListOptions{ResourceVersion: "0"}
	nodes, err := core.Nodes().List(ctx, cached)
	if err != nil {
		return readErr("nodes", err)
	}
	csiNodes, err := storage.CSINodes().List(ctx, cached)
	if err != nil {
		return readErr("csinodes.storage.k8s.io", err)
	}
	drivers, err := storage.CSIDrivers().List(ctx, cached)
	if err != nil {
		return readErr("csidrivers.storage.k8s.io", err)
	}
	vas, err := storage.VolumeAttachments().List(ctx, cached)
	if err != nil {
		return readErr("volumeattachments.storage.k8s.io", err)
	}
	out.Objects.Nodes, out.Objects.CSINodes, out.Objects.CSIDrivers, out.VolumeAttachments = nodes.Items, csiNodes.Items, drivers.Items, vas.Items
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		if out.Objects.CSINodeInfos, err = listSeed(ctx, c.Dynamic, csinodeinfo.GroupVersionResource, csinodeinfo.FromUnstructured); err != nil {
			return err
		}
	}
	if cfg.DriverSource.ReadsSeed() {
		if out.Objects.SeedCSIDrivers, err = listSeed(ctx, c.Dynamic, seedcsidriver.GroupVersionResource, seedcsidriver.FromUnstructured); err != nil {
			return err
		}
	}
	if out.DetachPolicies, err = plan.ListDetachPolicies(ctx, c.Dynamic); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Read the cluster for an explanation", "pods", len(out.Pods), "nodes", len(out.Objects.Nodes), "volumeAttachments", len(out.VolumeAttachments))
	return nil
}

// listSeed lists a seed-API resource; a CRD that is not installed means no objects.
func listSeed[T any](ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, convert func(*unstructured.Unstructured) (*T, error)) ([]T, error) {
	if dyn == nil {
		return nil, nil
	}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, readErr(gvr.GroupResource().String(), err)
	}
	out := make([]T, 0, len(list.Items))
	for i := range list.Items {
		o, err := convert(&list.Items[i])
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", gvr.GroupResource(), err)
		}
		out = append(out, *o)
	}
	return out, nil
}

func byName(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

func readErr(resource string, err error) error {
	hint := "check the API server is reachable and the kubeconfig's user may list " + resource
	if apierrors.IsForbidden(err) {
		hint = "grant the user list permission on " + resource + " (explain only reads)"
	}
	return fmt.Errorf("listing %s: %w; %s", resource, err, hint)
}

func findPod(pods []v1.Pod, ns, name string) *v1.Pod {
	for i := range pods {
		if pods[i].Namespace == ns && pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}
