package adc

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migration-aware/adc/pkg/migration"
)

// The external actors of a world: the external-attacher, the kubelets and whoever deletes
// and creates pods. They act on the API truth directly; the controller learns of it through
// its informers, as it would.
//
// The kubelet is modelled as the real one behaves toward the attach/detach controller: it
// reports a volume in status.volumesInUse as soon as a pod on the node wants it (before it
// is attached), mounts it only once the volume is attached AND listed in the node's
// status.volumesAttached (VerifyControllerAttachedVolume), unmounts it when no pod wants it
// any more, and only then stops reporting it in use.

// kubeletState is what the kubelets have mounted, by node and unique volume name.
type kubeletState map[string]map[string]bool

func (k kubeletState) mounted(node, unique string) bool { return k[node][unique] }

func (k kubeletState) set(node, unique string, on bool) {
	if k[node] == nil {
		k[node] = map[string]bool{}
	}
	if on {
		k[node][unique] = true
	} else {
		delete(k[node], unique)
	}
}

// actorMoves offers what the world's other actors may do now.
func (h *harness) actorMoves(add func(moveClass, string, func())) {
	h.attacherMoves(add)
	if n := h.w.shutdown; n != "" && !h.machineOff && h.api.nodes[n] != nil {
		add(classActor, "machine of "+n+" shuts down (not Ready, cloud shutdown taint)", func() { h.shutDown(n) })
	}
	for _, n := range h.w.nodes {
		if h.machineOff && n == h.w.shutdown {
			continue // no kubelet runs there any more
		}
		if node := h.api.nodes[n]; node != nil {
			for _, u := range h.w.disks() {
				h.kubeletMoves(add, node, u)
			}
		}
	}
	h.podMoves(add)
}

// shutDown turns node's machine off: its mounts are gone with it, its kubelet's last
// status.volumesInUse stays, and the node lifecycle controllers mark it not Ready and taint
// it (one update here; the real ones write twice, which only adds a state adc decides on the
// same way).
func (h *harness) shutDown(node string) {
	h.machineOff = true
	for u := range h.kubelet[node] {
		h.kubelet.set(node, u, false)
	}
	now := h.clk.Now()
	h.api.updateNode(node, func(n *v1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == v1.NodeReady {
				n.Status.Conditions[i].Status = v1.ConditionUnknown
				n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
			}
		}
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: migration.CloudShutdownTaint, Effect: v1.TaintEffectNoSchedule})
	})
}

// attacherMoves: the external-attacher attaches a new VolumeAttachment (adding its
// finalizer), or detaches one being deleted and removes the finalizer.
func (h *harness) attacherMoves(add func(moveClass, string, func())) {
	var names []string
	for name := range h.api.vas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		name, va := name, h.api.vas[name]
		switch {
		case va.DeletionTimestamp != nil:
			add(classActor, "attacher detaches "+name+" and removes its finalizer", func() { h.api.removeVA(name) })
		case !va.Status.Attached:
			add(classActor, "attacher attaches "+name, func() {
				h.api.updateVA(name, func(va *storagev1.VolumeAttachment) {
					va.Status.Attached = true
					va.Finalizers = []string{attacherFinalizer}
				})
			})
		}
	}
}

// kubeletMoves: what node's kubelet may do about one volume (its disk's unique name, the one
// name the kubelet knows it by, whatever PersistentVolume a pod names it with).
func (h *harness) kubeletMoves(add func(moveClass, string, func()), node *v1.Node, u string) {
	n := node.Name
	wanted, used, mounted := h.podUsesDisk(n, u), inUse(node, u), h.kubelet.mounted(n, u)
	switch {
	case wanted && !used:
		add(classActor, "kubelet "+n+" reports "+u+" in use", func() {
			h.inUseSince[n+"|"+u] = h.stepCount
			h.api.updateNode(n, func(n *v1.Node) { n.Status.VolumesInUse = append(n.Status.VolumesInUse, v1.UniqueVolumeName(u)) })
		})
	case wanted && !mounted && listed(node, u) && h.attachedIn(n, u):
		add(classActor, "kubelet "+n+" mounts "+u, func() { h.kubelet.set(n, u, true) })
	case !wanted && mounted:
		add(classActor, "kubelet "+n+" unmounts "+u, func() { h.kubelet.set(n, u, false) })
	case !wanted && used && !mounted:
		add(classActor, "kubelet "+n+" stops reporting "+u+" in use", func() {
			delete(h.inUseSince, n+"|"+u)
			h.api.updateNode(n, func(n *v1.Node) {
				var keep []v1.UniqueVolumeName
				for _, x := range n.Status.VolumesInUse {
					if string(x) != u {
						keep = append(keep, x)
					}
				}
				n.Status.VolumesInUse = keep
			})
		})
	}
}

// attachedIn reports whether the truth has the disk (its unique name) attached to node (and
// not being deleted), by a VolumeAttachment of any PersistentVolume of it.
func (h *harness) attachedIn(node, unique string) bool {
	for _, va := range h.api.vas {
		if va.Spec.NodeName == node && h.w.diskOfVA(va) == unique && va.Status.Attached && va.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// podMoves: a deletable pod is deleted, a creatable one created (once).
func (h *harness) podMoves(add func(moveClass, string, func())) {
	for _, p := range h.w.pods {
		p, key := p, worldNamespace+"/"+p.name
		_, exists := h.api.pods[key]
		switch {
		case exists && p.deletable:
			add(classPodChurn, "delete pod "+key, func() { h.api.deletePod(key) })
		case !exists && p.creatable && !h.created[p.name]:
			add(classPodChurn, "create pod "+key+" on "+p.node, func() {
				h.created[p.name] = true
				h.api.addPod(h.w.podObject(p))
			})
		}
	}
}
