package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
	"github.com/migration-aware/adc/pkg/volumeattach"
	"github.com/migration-aware/adc/test/simulator"
)

// countingAttachments wraps the controller's VolumeAttachment write boundary and counts the
// creates and deletes it sends, by VolumeAttachment name.
type countingAttachments struct {
	inner volumeattach.AttachmentWriter

	mu      sync.Mutex
	creates map[string]int
	deletes map[string]int
}

func newCountingAttachments(inner volumeattach.AttachmentWriter) *countingAttachments {
	return &countingAttachments{inner: inner, creates: map[string]int{}, deletes: map[string]int{}}
}

func (c *countingAttachments) Create(ctx context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	c.mu.Lock()
	c.creates[va.Name]++
	c.mu.Unlock()
	return c.inner.Create(ctx, va)
}

func (c *countingAttachments) Delete(ctx context.Context, name string, uid types.UID) error {
	c.mu.Lock()
	c.deletes[name]++
	c.mu.Unlock()
	return c.inner.Delete(ctx, name, uid)
}

// counts returns how many creates and deletes were sent for each of the given names (names
// with no call are left out).
func (c *countingAttachments) counts(names []string) (creates, deletes map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	creates, deletes = map[string]int{}, map[string]int{}
	for _, n := range names {
		if c.creates[n] > 0 {
			creates[n] = c.creates[n]
		}
		if c.deletes[n] > 0 {
			deletes[n] = c.deletes[n]
		}
	}
	return creates, deletes
}

// A controller restarted over existing VolumeAttachments (PV-backed and inline) sends no
// duplicate create and no spurious delete: the attachments still needed keep their UIDs, and
// the attachments whose pods were deleted while it was down, including an inline volume's
// (kubernetes#106749), are detached.
func TestRestartWithExistingAttachments(t *testing.T) {
	e := newEnv(t)
	driver := e.driverName("rs")
	e.startAttacher(&simulator.ExternalAttacher{Drivers: []string{driver, gceDriver}})
	node := e.node("n1", true)
	e.csiNode(node, gcePlugin, gceDriver, driver)

	type vol struct {
		pod, volume string
		name        string // VolumeAttachment
		unique      string
		orphan      bool // its pod is deleted while the controller is down
	}
	var vols []vol
	for _, v := range []struct {
		pod    string
		orphan bool
	}{{"keep-0", false}, {"keep-1", false}, {"gone-0", true}} {
		handle := "h-" + v.pod
		e.pod(v.pod, node, []string{e.boundClaim(e.csiPV(v.pod, driver, handle))})
		vols = append(vols, vol{pod: v.pod, volume: "data-0", name: vaName(handle, driver, node), unique: csiUnique(driver, handle), orphan: v.orphan})
	}
	for _, v := range []struct {
		pod    string
		orphan bool
	}{{"keep-inline", false}, {"gone-inline", true}} {
		handle := gceHandle("UNSPECIFIED", e.ns+"-"+v.pod)
		e.pod(v.pod, node, nil, inlineGCE("disk", e.ns+"-"+v.pod))
		vols = append(vols, vol{pod: v.pod, volume: "disk", name: vaName(handle, gceDriver, node), unique: csiUnique(gceDriver, handle), orphan: v.orphan})
	}
	var names []string
	for _, v := range vols {
		names = append(names, v.name)
	}

	first := newCountingAttachments(&volumeattach.ClientAttachmentWriter{Client: e.client})
	ctrl := e.startController(adc.Options{Attachments: first})
	for _, v := range vols {
		e.eventually(v.pod+" attached and listed", 10*time.Second, e.listedOnNode(node, v.unique))
	}
	creates, deletes := first.counts(names)
	for _, v := range vols {
		if creates[v.name] != 1 {
			t.Errorf("first controller: %d creates of %s (%s), want 1", creates[v.name], v.name, v.pod)
		}
	}
	if len(deletes) != 0 {
		t.Errorf("first controller deleted VolumeAttachments: %v", deletes)
	}
	uids := e.vaUIDs(names...)
	ctrl.stop()

	for _, v := range vols {
		if v.orphan {
			e.deletePod(v.pod)
		}
	}
	second := newCountingAttachments(&volumeattach.ClientAttachmentWriter{Client: e.client})
	ctrl = e.startController(adc.Options{Attachments: second})
	for _, v := range vols {
		if v.orphan {
			e.eventually("VolumeAttachment of "+v.pod+" (deleted while down) detached", 10*time.Second, e.vaGone(v.name))
			e.eventually(v.pod+" removed from node status", 5*time.Second, e.notListedOnNode(node, v.unique))
		}
	}
	e.consistently("kept attachments untouched, no duplicate create", time.Second, func() (bool, string) {
		now := e.vaUIDs(names...)
		for _, v := range vols {
			if !v.orphan && now[v.name] != uids[v.name] {
				return false, fmt.Sprintf("VolumeAttachment %s of %s was deleted or replaced (uid %q, was %q)", v.name, v.pod, now[v.name], uids[v.name])
			}
		}
		creates, deletes := second.counts(names)
		if len(creates) != 0 {
			return false, fmt.Sprintf("restarted controller sent creates %v", creates)
		}
		for _, v := range vols {
			if want := map[bool]int{true: 1}[v.orphan]; deletes[v.name] != want {
				return false, fmt.Sprintf("restarted controller sent %d deletes of %s (%s), want %d", deletes[v.name], v.name, v.pod, want)
			}
		}
		return true, ""
	})
	var attached []string
	for _, v := range vols {
		if v.orphan {
			continue
		}
		s, ok := pairState(ctrl.Controller, node, e.ns+"/"+v.pod, v.volume)
		if !ok || s.Phase != readmodel.PhaseAttached || s.Mechanism != migration.MechanismCSI || s.VolumeAttachment != v.name {
			t.Errorf("after the restart %s is %+v, want attached through %s", v.pod, s, v.name)
		}
		attached = append(attached, v.unique)
	}
	sort.Strings(attached)
	got := e.attachedNames(node)
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(attached) {
		t.Errorf("node status lists %v after the restart, want %v", got, attached)
	}
}
