package adc

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
)

// Config returns the migration configuration the controller decides with.
func (c *Controller) Config() migration.Config { return c.opts.Migration }

// ManagedNodes returns, from the informer caches, every node the controller manages with
// the objects that say its migration state, sorted by name; the rollout view counts nodes
// migrated per plugin from them.
func (c *Controller) ManagedNodes() []migration.NodeObjects {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := make([]migration.NodeObjects, 0, len(nodes))
	for _, n := range nodes {
		if !migration.IsManagedNode(n) {
			continue
		}
		out = append(out, c.nodeObjects(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodeObjects returns the node with the objects that say its migration state, from the caches.
func (c *Controller) nodeObjects(n *v1.Node) migration.NodeObjects {
	obj := migration.NodeObjects{Name: n.Name, Node: n, CSINodeInfo: c.nodeInfos.Get(n.Name)}
	obj.CSINode = cached.ByName[storagev1.CSINode](c.csiNodes, n.Name)
	return obj
}
