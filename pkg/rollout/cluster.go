package rollout

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

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
	cl, err := plan.ReadCluster(ctx, c, cfg, plan.Scope{VolumeAttachments: true})
	if err != nil {
		return Report{}, fmt.Errorf("computing rollout status: %w", err)
	}
	vas := make([]attachmentRef, 0, len(cl.VolumeAttachments))
	for _, va := range cl.VolumeAttachments {
		ref := attachmentRef{node: va.Spec.NodeName, name: va.Name}
		if va.Spec.Source.PersistentVolumeName != nil {
			ref.pv = *va.Spec.Source.PersistentVolumeName
		}
		vas = append(vas, ref)
	}
	now := time.Now()
	r := fromObjects(cfg, cl.Pods, cl.Objects, vas, now)
	r.NodeLoss = plan.NodeLossFromObjects(cl.Objects, cl.DetachPolicies, plan.DefaultMaxWaitForUnmount, now)
	r.OtherController = otherControllerFromEvents(listOtherControllerEvents(ctx, c.Kube))
	return r, nil
}

// attachmentRef is what a cluster report needs of a VolumeAttachment.
type attachmentRef struct {
	node, pv, name string
}

// fromObjects is the pure part of FromCluster, tested on its own.
func fromObjects(cfg migration.Config, pods []v1.Pod, objs migration.Objects, vas []attachmentRef, now time.Time) Report {
	r := newReport(SourceCluster, cfg, now)
	idx := migration.NewObjectIndex(objs)
	var nodes []migration.NodeObjects
	for i := range objs.Nodes {
		if migration.IsManagedNode(&objs.Nodes[i]) {
			nodes = append(nodes, idx.NodeObjects(objs.Nodes[i].Name))
		}
	}
	r.NodesManaged = len(nodes)
	var states nodeStates
	r.Plugins, states, r.Notes, r.Nodes = countNodes(cfg, nodes)
	where := newAttachedIndex(objs.Nodes, vas)
	var facts []pairFacts

	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || !migration.PodIsActive(pod) || states[pod.Spec.NodeName] == nil {
			continue // unscheduled, terminated, or on a node adc does not manage
		}
		node := idx.NodeObjects(pod.Spec.NodeName)
		podKey := pod.Namespace + "/" + pod.Name
		for _, dv := range migration.DecidePod(&cfg, &pod.ObjectMeta, pod.Spec.Volumes, node, idx) {
			pv, d := dv.PodVolume, dv.Decision
			r.VolumesByMechanism[d.Mechanism]++
			facts = append(facts, pairFacts{node: node.Name, pod: podKey, volume: pv.Name, pv: pv.PVName, plugin: d.Plugin, mechanism: d.Mechanism})
			if d.Mechanism == migration.MechanismWait || d.Mechanism == migration.MechanismError {
				r.Held = append(r.Held, HeldPair{Node: node.Name, Pod: podKey, Volume: pv.Name, PV: pv.PVName, Plugin: d.Plugin, Mechanism: d.Mechanism, Reason: d.Reason})
			}
			if d.Mechanism == migration.MechanismError && isSkew(&cfg, states, node.Name, d.Plugin, d.Reason) {
				r.Problems = append(r.Problems, Problem{Kind: ProblemVersionSkew, Node: node.Name, Pod: podKey, Volume: pv.Name, Reason: d.Reason})
			}
			if other := where.blockedBy(&d, pv.PVName, node.Name); other != "" {
				r.Problems = append(r.Problems, Problem{Kind: ProblemMultiAttach, Node: node.Name, Pod: podKey, Volume: pv.Name,
					Reason: migration.MultiAttachReason(other)})
			}
		}
	}
	tallyPlugins(r.Plugins, states, facts)
	countNodeVolumes(r.Nodes, facts)
	sortPairs(r.Held, func(h HeldPair) [3]string { return [3]string{h.Node, h.Pod, h.Volume} })
	sortPairs(r.Problems, func(p Problem) [3]string { return [3]string{p.Node, p.Pod, p.Volume} })
	return r
}
