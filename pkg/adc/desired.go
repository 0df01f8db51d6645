package adc

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/memory"
	"github.com/migration-aware/adc/pkg/migration"
)

// ManagedAnnotation marks the nodes whose attach and detach the controller owns.
const ManagedAnnotation = migration.ManagedAnnotation

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
	names := migration.NamesOf(d, node)
	id := identity{vaName: names.VolumeAttachment, csiUnique: names.CSIUnique, inTreeUnique: names.InTreeUnique}
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
	objs, err := c.pods.ByIndex(byNodeIndex, node.Name)
	if err != nil || len(objs) == 0 {
		return nil
	}
	nodeObjs := c.nodeObjects(node)
	var pairs []*pair
	for _, obj := range objs {
		if p, ok := cached.PlacementOf(obj); !ok || !p.Active() {
			continue
		}
		meta, volumes, ok := cached.PodVolumes(obj)
		if !ok {
			continue
		}
		podKey := meta.GetNamespace() + "/" + meta.GetName()
		for _, dv := range migration.DecidePod(&c.opts.Migration, meta, volumes, nodeObjs, c.lookups) {
			p := &pair{podObj: obj, podKey: podKey, volume: dv.Name, pvName: dv.PVName, pv: dv.PV, inline: dv.Inline, d: dv.Decision}
			p.ids = identify(&p.d, p.pvName, node.Name)
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// podObject is the pair's pod, rebuilt from the cache for an Event: the one reader that needs
// it whole.
func (p *pair) podObject() runtime.Object {
	pod, _ := cached.PodOf(p.podObj)
	return pod
}

// podRef names the pair's pod in logs.
func (p *pair) podRef() klog.ObjectRef {
	if m, ok := p.podObj.(klog.KMetadata); ok {
		return klog.KObj(m)
	}
	return klog.ObjectRef{}
}
