package scenario

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// bestCase is the least an attach/detach controller can do, done by the harness with
// nothing left to decide. It lists what any controller must know (pods, claims, PVs), creates
// every VolumeAttachment it needs at once in node order, and writes each node's
// status.volumesAttached once, as soon as all its volumes are attached: the fewest writes,
// each sent at the earliest moment. Its times are the soonest a controller can list
// volumes on this control plane with this attacher, and the calibration's benchmark for
// "anything left to win" (issue #28).
type bestCase struct {
	client kubernetes.Interface
	// attachments are the VolumeAttachments to create, in node order.
	attachments []*storagev1.VolumeAttachment
	// volumes are each node's volumes to list; nodeOf the node of each VolumeAttachment.
	volumes map[string][]v1.AttachedVolume
	nodeOf  map[string]string

	mu sync.Mutex
	// pending counts each node's volumes not yet seen attached.
	pending map[string]int
	// patched is when each node status write returned.
	patched []time.Time
	ready   chan string
	err     error
}

// planBestCase lists the seeded pods, claims and PVs and plans the VolumeAttachments of at
// most limit volumes, in node order, as a controller would from its informers.
func planBestCase(ctx context.Context, client kubernetes.Interface, limit int) (*bestCase, error) {
	pods, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("best case: listing pods: %w", err)
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("best case: listing claims: %w", err)
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("best case: listing PVs: %w", err)
	}
	pvOfClaim := make(map[string]string, len(claims.Items))
	for i := range claims.Items {
		pvOfClaim[claims.Items[i].Name] = claims.Items[i].Spec.VolumeName
	}
	csiOfPV := make(map[string]*v1.CSIPersistentVolumeSource, len(pvs.Items))
	for i := range pvs.Items {
		csiOfPV[pvs.Items[i].Name] = pvs.Items[i].Spec.CSI
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		a, b := &pods.Items[i], &pods.Items[j]
		return a.Spec.NodeName < b.Spec.NodeName || a.Spec.NodeName == b.Spec.NodeName && a.Name < b.Name
	})
	b := &bestCase{client: client, volumes: map[string][]v1.AttachedVolume{}, nodeOf: map[string]string{}, pending: map[string]int{}}
	for i := range pods.Items {
		pod := &pods.Items[i]
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil || len(b.attachments) >= limit {
				continue
			}
			pv := pvOfClaim[vol.PersistentVolumeClaim.ClaimName]
			csi := csiOfPV[pv]
			if csi == nil {
				return nil, fmt.Errorf("best case: pod %s/%s: claim %s has no CSI PV", pod.Namespace, pod.Name, vol.PersistentVolumeClaim.ClaimName)
			}
			node := pod.Spec.NodeName
			va := volumeattach.NewVolumeAttachment(migration.VolumeAttachmentName(csi.VolumeHandle, csi.Driver, node), csi.Driver, node,
				storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv})
			b.attachments = append(b.attachments, va)
			b.nodeOf[va.Name] = node
			b.volumes[node] = append(b.volumes[node], v1.AttachedVolume{Name: v1.UniqueVolumeName(migration.CSIUniqueName(csi.Driver, csi.VolumeHandle))})
			b.pending[node]++
		}
	}
	b.ready = make(chan string, len(b.volumes))
	return b, nil
}

// start watches VolumeAttachments, as a controller does, and writes each node's status from
// workers once its volumes are all attached.
func (b *bestCase) start(ctx context.Context, workers int) {
	f := informers.NewSharedInformerFactory(b.client, 0)
	onVA := func(obj interface{}) {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok || !va.Status.Attached {
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		node, ok := b.nodeOf[va.Name]
		if !ok {
			return
		}
		delete(b.nodeOf, va.Name) // counted once
		if b.pending[node]--; b.pending[node] == 0 {
			b.ready <- node
		}
	}
	_, _ = f.Storage().V1().VolumeAttachments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onVA, UpdateFunc: func(_, cur interface{}) { onVA(cur) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	for range workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case node := <-b.ready:
					b.writeStatus(ctx, node)
				}
			}
		}()
	}
}

// writeStatus lists every volume of node in its status, in one merge patch as adc sends.
func (b *bestCase) writeStatus(ctx context.Context, node string) {
	_, err := (&volumeattach.ClientStatusWriter{Client: b.client}).PatchVolumesAttached(ctx, node, b.volumes[node])
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("best case: %w", err)
	}
	b.patched = append(b.patched, time.Now())
}

// statusWritesBy is how many node status writes had returned by t.
func (b *bestCase) statusWritesBy(t time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, p := range b.patched {
		if !p.After(t) {
			n++
		}
	}
	return n
}

// failed is the first status write's error, if any.
func (b *bestCase) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
