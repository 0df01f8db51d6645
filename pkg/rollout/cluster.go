package rollout

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	csinodeinfo "github.com/migration-aware/adc/pkg/apis/csinodeinfo/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// FromCluster computes the rollout summary from the cluster's objects, without a running
// controller, for `adc status`. It lists each resource once and only reads. Decisions come
// from the same engine and the same pod and volume resolution as `adc plan` (PodIsActive,
// PodVolumes, DecidePodVolume), restricted to managed nodes. What only a controller knows is
// left out or approximated, as docs/rollout-api.md says: no operations, no retries or retry
// times; held lists wait and error decisions (whether in-tree pairs are held depends on the
// controller having an in-tree attacher); a multi-attach problem is reported for a
// ReadWriteOnce volume not attached to its pod's node while a VolumeAttachment or node status
// shows it attached to another node.
func FromCluster(ctx context.Context, c plan.Clients, cfg migration.Config) (Report, error) {
	if c.Kube == nil {
		return Report{}, fmt.Errorf("computing rollout status: no Kubernetes client")
	}
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("computing rollout status: %w", err)
	}
	objs, pods, vas, err := list(ctx, c, cfg)
	if err != nil {
		return Report{}, err
	}
	return fromObjects(cfg, pods, objs, vas, time.Now()), nil
}

// attachmentRef is what a cluster report needs of a VolumeAttachment.
type attachmentRef struct {
	node, pv, name string
}

// list lists, once each, what a cluster report needs.
func list(ctx context.Context, c plan.Clients, cfg migration.Config) (migration.Objects, []v1.Pod, []attachmentRef, error) {
	var objs migration.Objects
	core, storage := c.Kube.CoreV1(), c.Kube.StorageV1()
	pods, err := core.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return objs, nil, nil, listErr("pods", err)
	}
	pvcs, err := core.PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("persistentvolumeclaims", err)
	}
	pvs, err := core.PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("persistentvolumes", err)
	}
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("nodes", err)
	}
	csiNodes, err := storage.CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("csinodes.storage.k8s.io", err)
	}
	drivers, err := storage.CSIDrivers().List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("csidrivers.storage.k8s.io", err)
	}
	vaList, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return objs, nil, nil, listErr("volumeattachments.storage.k8s.io", err)
	}
	var infos []csinodeinfo.CSINodeInfo
	if cfg.NodeSource == migration.NodeSourceCSINodeInfo || cfg.NodeSource == migration.NodeSourceAuto {
		if infos, err = listCSINodeInfos(ctx, c.Dynamic); err != nil {
			return objs, nil, nil, err
		}
	}
	vas := make([]attachmentRef, 0, len(vaList.Items))
	for _, va := range vaList.Items {
		ref := attachmentRef{node: va.Spec.NodeName, name: va.Name}
		if va.Spec.Source.PersistentVolumeName != nil {
			ref.pv = *va.Spec.Source.PersistentVolumeName
		}
		vas = append(vas, ref)
	}
	objs = migration.Objects{PVCs: pvcs.Items, PVs: pvs.Items, CSIDrivers: drivers.Items, CSINodes: csiNodes.Items, CSINodeInfos: infos, Nodes: nodes.Items}
	return objs, pods.Items, vas, nil
}

// listCSINodeInfos lists the seed-API objects; a missing CRD (or no dynamic client) means
// none exist, as in `adc plan`.
func listCSINodeInfos(ctx context.Context, dyn dynamic.Interface) ([]csinodeinfo.CSINodeInfo, error) {
	if dyn == nil {
		return nil, nil
	}
	l, err := dyn.Resource(csinodeinfo.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, listErr(csinodeinfo.GroupVersionResource.GroupResource().String(), err)
	}
	infos := make([]csinodeinfo.CSINodeInfo, 0, len(l.Items))
	for i := range l.Items {
		info, err := csinodeinfo.FromUnstructured(&l.Items[i])
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
		hint = "grant the kubeconfig's user list permission on " + resource + " cluster-wide (adc status only reads)"
	}
	return fmt.Errorf("listing %s: %w; %s", resource, err, hint)
}

// IsManaged reports whether the controller manages the node's volumes (the kubelet set the
// controller-managed-attach-detach annotation to "true").
func IsManaged(n *v1.Node) bool {
	return n != nil && n.Annotations[ManagedAnnotation] == "true"
}

// fromObjects is the pure part of FromCluster, tested on its own.
func fromObjects(cfg migration.Config, pods []v1.Pod, objs migration.Objects, vas []attachmentRef, now time.Time) Report {
	r := newReport(SourceCluster, cfg, now)
	idx := migration.NewObjectIndex(objs)
	var nodes []migration.NodeObjects
	for i := range objs.Nodes {
		if IsManaged(&objs.Nodes[i]) {
			nodes = append(nodes, idx.NodeObjects(objs.Nodes[i].Name))
		}
	}
	r.NodesManaged = len(nodes)
	var states nodeStates
	r.Plugins, states, r.Notes = countNodes(cfg, nodes)
	where := newAttachedIndex(objs.Nodes, vas)

	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || !migration.PodIsActive(pod) || states[pod.Spec.NodeName] == nil {
			continue // unscheduled, terminated, or on a node adc does not manage
		}
		node := idx.NodeObjects(pod.Spec.NodeName)
		podKey := pod.Namespace + "/" + pod.Name
		for _, pv := range migration.PodVolumes(pod, idx) {
			d := migration.DecidePodVolume(&cfg, pv, pod.Namespace, node, idx)
			r.VolumesByMechanism[d.Mechanism]++
			if d.Mechanism == migration.MechanismWait || d.Mechanism == migration.MechanismError {
				r.Held = append(r.Held, HeldPair{Node: node.Name, Pod: podKey, Volume: pv.Name, PV: pv.PVName, Plugin: d.Plugin, Mechanism: d.Mechanism, Reason: d.Reason})
			}
			if d.Mechanism == migration.MechanismError && isSkew(&cfg, states, node.Name, d.Plugin, d.Reason) {
				r.Problems = append(r.Problems, Problem{Kind: ProblemVersionSkew, Node: node.Name, Pod: podKey, Volume: pv.Name, Reason: d.Reason})
			}
			if other := where.blockedBy(&d, pv.PVName, node.Name); other != "" {
				r.Problems = append(r.Problems, Problem{Kind: ProblemMultiAttach, Node: node.Name, Pod: podKey, Volume: pv.Name,
					Reason: fmt.Sprintf("volume is ReadWriteOnce and still attached to node %q; it is attached here as soon as that attachment is gone", other)})
			}
		}
	}
	sortPairs(r.Held, func(h HeldPair) [3]string { return [3]string{h.Node, h.Pod, h.Volume} })
	sortPairs(r.Problems, func(p Problem) [3]string { return [3]string{p.Node, p.Pod, p.Volume} })
	return r
}
