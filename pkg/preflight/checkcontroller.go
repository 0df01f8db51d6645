package preflight

import (
	"fmt"
	"sort"
	"time"

	"github.com/migration-aware/adc/pkg/volumeattach"
)

// checkOtherController: kube-controller-manager's own attach/detach controller wrote last
// what adc owns (a managed node's status.volumesAttached, a VolumeAttachment). If it is still
// on when adc starts, adc sees its next write and writes nothing until it has been quiet, so
// it must be switched off first. The managedFields say who wrote last, not whether it is on:
// the finding warns, it does not block.
func (w *world) checkOtherController() {
	type evidence struct {
		nodes, vas int
		latest     time.Time
		node, va   string
	}
	seen := map[string]*evidence{}
	note := func(manager string) *evidence {
		e := seen[manager]
		if e == nil {
			e = &evidence{}
			seen[manager] = e
		}
		return e
	}
	for _, n := range w.managed {
		if n.Node == nil {
			continue
		}
		m, ok := volumeattach.VolumesAttachedEntry(n.Node)
		if !ok {
			continue
		}
		e := note(m.Manager)
		e.nodes++
		if m.Time != nil && !m.Time.Time.Before(e.latest) {
			e.latest, e.node = m.Time.Time, n.Name
		}
	}
	names := make([]string, 0, len(w.vas))
	for name := range w.vas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m, ok := volumeattach.CreatorEntry(w.vas[name])
		if !ok {
			continue
		}
		e := note(m.Manager)
		e.vas++
		if m.Time != nil && m.Time.Time.After(e.latest) {
			e.latest, e.node, e.va = m.Time.Time, w.vas[name].Spec.NodeName, name
		}
	}
	kcm := seen[volumeattach.KubeControllerManager]
	if kcm == nil {
		return
	}
	if own := seen[volumeattach.FieldManager]; own != nil && own.latest.After(kcm.latest) {
		return // adc wrote last: it is the controller in charge
	}
	last := "node " + kcm.node + "'s status"
	if kcm.va != "" {
		last = "VolumeAttachment " + kcm.va
	}
	obj := Object{Kind: "Node", Name: kcm.node}
	if kcm.va != "" {
		obj = Object{Kind: "VolumeAttachment", Name: kcm.va}
	}
	w.add(Finding{Severity: Warns, Check: CheckOtherController, Object: obj, Node: kcm.node,
		Why: fmt.Sprintf("kube-controller-manager's attach/detach controller wrote last what adc would own: it owns status.volumesAttached of %s and created %s (last write: %s at %s); "+
			"if it is still on when adc starts, adc sees its next write and attaches, detaches and writes node status not at all until it has been quiet for --other-controller-quiet-period",
			count(kcm.nodes, "managed node", "managed nodes"), count(kcm.vas, "VolumeAttachment", "VolumeAttachments"), last, kcm.latest.UTC().Format(time.RFC3339)),
		Fix: "switch it off before starting adc: restart kube-controller-manager with --controllers=*,-persistentvolume-attach-detach-controller " +
			"(docs/operating.md, Adopt, roll back, upgrade); adc adopts what it attached, nothing is detached"})
}
