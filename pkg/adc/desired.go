package adc

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/adc/internal/actual"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
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
	ids    actual.Identity
	// att is the existing attachment of this volume on the node, if any.
	att *actual.Attachment
	// st is the pair's state in the running reconcile.
	st *readmodel.PairState
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
			p.ids = actual.Identify(&p.d, p.pvName, node.Name)
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
