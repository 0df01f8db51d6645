package adc

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/migration"

	"github.com/migration-aware/adc/pkg/adc/internal/memory"
)

// ManagedAnnotation marks the nodes whose attach and detach the controller owns.
const ManagedAnnotation = migration.ManagedAnnotation

func managed(node *v1.Node) bool { return migration.IsManagedNode(node) }

// pair is one volume of one active pod on the node being reconciled, with its decision.
type pair struct {
	// podObj is the pod as the pod cache holds it (whole, or a cachedPod).
	podObj interface{}
	podKey string
	volume string
	pvName string
	// spec is the resolved volume, for in-tree attach calls.
	pv     *v1.PersistentVolume
	inline *v1.Volume
	d      migration.Decision
	ids    identity
	// att is the existing attachment of this volume on the node, if any.
	att *attachment
}

// identity is every name under which an attachment of the pair's volume may exist on the
// node, whatever mechanism made it: a node that flipped between in-tree and CSI keeps the
// attachment it has (kubernetes#98687).
type identity struct {
	vaName       string // VolumeAttachment name on the CSI path
	csiUnique    string // kubernetes.io/csi/<driver>^<handle>
	inTreeUnique string // <plugin>/<volume id>
	sourceKey    string // node-independent: pv:<name> or inline:<driver>^<handle>
}

func identify(d *migration.Decision, pvName, node string) identity {
	var id identity
	if d.Driver != "" && d.VolumeHandle != "" {
		id.vaName = d.VolumeAttachmentName
		if id.vaName == "" {
			id.vaName = migration.VolumeAttachmentName(d.VolumeHandle, d.Driver, node)
		}
		id.csiUnique = migration.CSIUniqueName(d.Driver, d.VolumeHandle)
	}
	switch {
	case d.Mechanism == migration.MechanismInTree:
		id.inTreeUnique = d.UniqueName
	case d.InTreeUniqueName != "":
		id.inTreeUnique = d.InTreeUniqueName
	}
	switch {
	case pvName != "":
		id.sourceKey = memory.PVKey(pvName)
	case d.Driver != "" && d.VolumeHandle != "":
		id.sourceKey = memory.InlineKey(d.Driver, d.VolumeHandle)
	case id.inTreeUnique != "":
		id.sourceKey = memory.InTreeKey(id.inTreeUnique)
	}
	return id
}

// desiredPairs decides every volume of every active pod scheduled to the node.
func (c *Controller) desiredPairs(node *v1.Node) []*pair {
	objs, err := c.pods.ByIndex(podByNodeIndex, node.Name)
	if err != nil || len(objs) == 0 {
		return nil
	}
	nodeObjs := c.nodeObjects(node)
	in := migration.Input{
		NodeName:    node.Name,
		Node:        node,
		CSINode:     nodeObjs.CSINode,
		CSINodeInfo: nodeObjs.CSINodeInfo,
		CSIDrivers:  c.lookups,
	}
	cfg := &c.opts.Migration
	var pairs []*pair
	for _, obj := range objs {
		if p, ok := placementOf(obj); !ok || !p.active() {
			continue
		}
		meta, volumes, ok := podVolumesOf(obj)
		if !ok {
			continue
		}
		namespace := meta.GetNamespace()
		podKey := namespace + "/" + meta.GetName()
		for _, pv := range migration.VolumesOf(meta, volumes, c.lookups) {
			p := &pair{podObj: obj, podKey: podKey, volume: pv.Name, pvName: pv.PVName, pv: pv.PV, inline: pv.Inline}
			if pv.Pending != nil {
				p.d = *pv.Pending
			} else {
				in.PV, in.InlineVolume, in.PodNamespace = pv.PV, pv.Inline, namespace
				p.d = migration.Decide(cfg, &in)
			}
			p.ids = identify(&p.d, p.pvName, node.Name)
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// podObject is the pair's pod, rebuilt from the cache for an Event: the one reader that needs
// it whole.
func (p *pair) podObject() runtime.Object {
	pod, _ := podOf(p.podObj)
	return pod
}

// podRef names the pair's pod in logs.
func (p *pair) podRef() klog.ObjectRef {
	if m, ok := p.podObj.(klog.KMetadata); ok {
		return klog.KObj(m)
	}
	return klog.ObjectRef{}
}

// podVolumesOf gives what deciding a pod's volumes reads of a pod cache entry (its metadata
// and spec.volumes), without rebuilding a cached pod whole: only its volumes are.
func podVolumesOf(obj interface{}) (metav1.Object, []v1.Volume, bool) {
	switch p := obj.(type) {
	case *v1.Pod:
		if p != nil {
			return &p.ObjectMeta, p.Spec.Volumes, true
		}
	case *cachedPod:
		if p != nil {
			return &p.compactMeta, p.v1Volumes(), true
		}
	}
	return nil, nil, false
}
