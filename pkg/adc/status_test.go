package adc

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// recordingStatus is a StatusWriter that remembers every write.
type recordingStatus struct {
	mu     sync.Mutex
	writes [][]v1.AttachedVolume
}

var _ volumeattach.StatusWriter = &recordingStatus{}

func (r *recordingStatus) PatchVolumesAttached(_ context.Context, name string, vols []v1.AttachedVolume) (*v1.Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, vols)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "2"}}, nil
}

// TestNodeStatusWrittenAtOnce: an attached volume is listed by the first status sync even
// while other attaches of its node are pending; only NodeStatusMaxDelay makes it wait.
func TestNodeStatusWrittenAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxDelay  time.Duration
		wantWrite bool
	}{
		{"default: written at once while another attach is pending", 0, true},
		{"with NodeStatusMaxDelay: waits for the pending attach", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			status := &recordingStatus{}
			clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
			c, err := New(client, nil, factory, Options{NodeStatus: status, NodeStatusMaxDelay: tc.maxDelay,
				Clock: clk, Recorder: record.NewFakeRecorder(10)})
			if err != nil {
				t.Fatal(err)
			}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1",
				Annotations: map[string]string{migration.ManagedAnnotation: "true"}}}
			add := func(obj interface{}, store interface{ Add(interface{}) error }) {
				if err := store.Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			add(node, factory.Core().V1().Nodes().Informer().GetIndexer())
			pvs := factory.Core().V1().PersistentVolumes().Informer().GetIndexer()
			vas := factory.Storage().V1().VolumeAttachments().Informer().GetIndexer()
			for i, h := range []string{"h1", "h2"} {
				pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + h}, Spec: v1.PersistentVolumeSpec{
					PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: h}}}}
				add(pv, pvs)
				va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(h, "d", "n1")},
					Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1",
						Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv.Name)}},
					// The first is attached, the second still pending at the attacher.
					Status: storagev1.VolumeAttachmentStatus{Attached: i == 0}}
				add(va, vas)
			}

			retryAfter, err := c.nodeStatus.Sync(ctx, "n1")
			if err != nil {
				t.Fatal(err)
			}
			wrote := len(status.writes) == 1
			if wrote != tc.wantWrite {
				t.Fatalf("writes = %v (retryAfter %s), want a write: %v", status.writes, retryAfter, tc.wantWrite)
			}
			if wrote {
				if got := status.writes[0]; len(got) != 1 || got[0].Name != "kubernetes.io/csi/d^h1" || retryAfter != 0 {
					t.Errorf("wrote %v (retryAfter %s), want only the attached volume, no retry", got, retryAfter)
				}
			} else if retryAfter <= 0 || retryAfter > tc.maxDelay {
				t.Errorf("retryAfter = %s, want a value in (0, %s]", retryAfter, tc.maxDelay)
			}
		})
	}
}
