package adc

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/adc/internal/nodestatus"
	"github.com/migration-aware/adc/pkg/migration"
)

// Every handler turns an event into the names of the nodes whose attachments it may change;
// the queue carries only those keys, never objects.

func (c *Controller) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			c.claimUsers.Update(nil, obj)
			if p, ok := cached.PlacementOf(obj); ok {
				c.enqueueNode(p.Node)
			}
		},
		UpdateFunc: func(old, cur interface{}) {
			c.claimUsers.Update(old, cur)
			o, ok1 := cached.PlacementOf(old)
			n, ok2 := cached.PlacementOf(cur)
			if !ok1 || !ok2 {
				return
			}
			if o.Node != n.Node {
				c.enqueueNode(o.Node)
			}
			// A deleted pod's volumes stay wanted while a container runs: its node is
			// decided again when the last one stops.
			if o != n {
				c.enqueueNode(n.Node)
			}
		},
		DeleteFunc: func(obj interface{}) {
			c.claimUsers.Update(cached.UnwrapTombstone(obj), nil)
			if p, ok := cached.PlacementOf(cached.UnwrapTombstone(obj)); ok {
				c.enqueueNode(p.Node)
			}
		},
	}
}

func (c *Controller) pvcHandler() cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		if pvc, ok := cached.ClaimOf(cached.UnwrapTombstone(obj)); ok {
			c.enqueueClaimUsers(cached.ClaimRef{Namespace: pvc.Namespace, Name: pvc.Name})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur interface{}) {
			o, ok1 := cached.ClaimOf(old)
			n, ok2 := cached.ClaimOf(cur)
			if ok1 && ok2 && o.Spec.VolumeName == n.Spec.VolumeName && o.Status.Phase == n.Status.Phase {
				return
			}
			enqueue(cur)
		},
		DeleteFunc: enqueue,
	}
}

func (c *Controller) pvHandler() cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		pv, ok := cached.PVOf(cached.UnwrapTombstone(obj))
		if !ok {
			return
		}
		// The nodes its volume is attached to: a PersistentVolume that comes back (or is
		// re-created for the disk) names their attachments again and may change their rule.
		if driver, handle, ok := migration.PVCSIIdentity(pv); ok {
			for _, node := range c.mem.NodesWithVolume(migration.CSIUniqueName(driver, handle)) {
				c.enqueueNode(node)
			}
		}
		if pv.Spec.ClaimRef == nil {
			return
		}
		c.enqueueClaimUsers(cached.ClaimRef{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur interface{}) {
			o, ok1 := cached.PVOf(old)
			n, ok2 := cached.PVOf(cur)
			if ok1 && ok2 && o.ResourceVersion == n.ResourceVersion {
				return
			}
			enqueue(cur)
		},
		DeleteFunc: enqueue,
	}
}

// enqueueClaimUsers enqueues the nodes of the pods that use a claim.
func (c *Controller) enqueueClaimUsers(claim cached.ClaimRef) {
	for _, key := range c.claimUsers.PodKeys(claim) {
		obj, exists, err := c.pods.GetByKey(key)
		if err != nil || !exists {
			continue
		}
		if p, ok := cached.PlacementOf(obj); ok {
			c.enqueueNode(p.Node)
		}
	}
}

func (c *Controller) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if n, ok := obj.(*v1.Node); ok {
				c.mem.NoteManaged(n.Name, migration.IsManagedNode(n))
				c.enqueueNode(n.Name)
			}
		},
		UpdateFunc: func(old, cur interface{}) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := cur.(*v1.Node)
			if ok2 {
				c.mem.NoteManaged(n.Name, migration.IsManagedNode(n))
			}
			if ok1 && ok2 {
				c.noteOtherWrite(c.guard.NodeUpdated(o, n))
			}
			switch {
			case !ok1 || !ok2 || o.ResourceVersion == n.ResourceVersion:
			case nodestatus.OnlyListsMore(o, n):
				// Mostly adc's own status writes coming back: no decision reads what changed,
				// only the status worker compares it with what the node should list. (A volume
				// leaving the list may let a detach go on: that re-reconciles the node.)
				c.statusQueue.Add(n.Name)
			default:
				c.enqueueNode(n.Name)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if n, ok := cached.UnwrapTombstone(obj).(*v1.Node); ok {
				// The last state seen decides whether adc detaches what the node leaves behind.
				c.mem.NoteManaged(n.Name, migration.IsManagedNode(n))
				c.enqueueNode(n.Name)
			}
		},
	}
}

func (c *Controller) csiNodeHandler() cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		if n, ok := cached.UnwrapTombstone(obj).(*storagev1.CSINode); ok {
			c.enqueueNode(n.Name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur interface{}) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

// csiDriverHandler re-decides every node: CSIDriver changes are rare and can switch any
// pair between csi and csi-no-attach.
func (c *Controller) csiDriverHandler() cache.ResourceEventHandler {
	enqueue := func(interface{}) { c.enqueueAllNodes() }
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur interface{}) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

func (c *Controller) vaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, inInitialList bool) {
			if va, ok := cached.VAOf(obj); ok {
				c.noteOtherWrite(c.guard.AttachmentAdded(va, inInitialList))
				created := c.mem.Observed(va)
				c.ops.AttachObserved(va)
				if created && cached.VAPending(va) {
					// The reconcile that created it already counts it as attaching.
					return
				}
				c.enqueueNode(va.Spec.NodeName)
			}
		},
		UpdateFunc: func(old, cur interface{}) {
			va, ok := cached.VAOf(cur)
			if !ok {
				return
			}
			c.mem.Observed(va)
			c.ops.AttachObserved(va)
			prev, ok := cached.VAOf(old)
			if !ok {
				c.enqueueNode(va.Spec.NodeName)
				return
			}
			if prev.Status.Attached != va.Status.Attached && va.Spec.NodeName != "" {
				// Straight to the node's status writer: listing a volume that became attached
				// needs no reconcile of the node's pods, and at scale the node queue is long.
				c.statusQueue.Add(va.Spec.NodeName)
			}
			switch cached.VAUpdateOf(prev, va) {
			case cached.VAUnchanged:
			case cached.VANowAttached:
				if !c.pairs.MarkAttached(va.Spec.NodeName, va.Name, c.opts.Clock.Now()) {
					c.enqueueNode(va.Spec.NodeName)
				}
			default:
				c.enqueueNode(va.Spec.NodeName)
			}
		},
		DeleteFunc: func(obj interface{}) {
			va, ok := cached.VAOf(cached.UnwrapTombstone(obj))
			if !ok {
				return
			}
			c.ops.Deleted(va)
			for _, node := range c.mem.Gone(va) {
				c.enqueueNode(node)
			}
			c.enqueueNode(va.Spec.NodeName)
		},
	}
}
