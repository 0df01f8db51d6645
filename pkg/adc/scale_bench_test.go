package adc

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// memAttacher is an AttachmentWriter over the in-memory VolumeAttachment store: a create is
// stored at once, as adc's informer would show it (compact), and remembered for the benchmark's attacher.
type memAttacher struct {
	mu      sync.Mutex
	store   cache.Indexer
	created []*storagev1.VolumeAttachment
	rv      int
}

var _ volumeattach.AttachmentWriter = &memAttacher{}

func (m *memAttacher) Create(_ context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rv++
	va = va.DeepCopy()
	va.UID = types.UID(fmt.Sprintf("uid-%d", m.rv))
	va.ResourceVersion = fmt.Sprint(m.rv)
	m.created = append(m.created, va)
	cached, err := cached.Transform(va.DeepCopy())
	if err != nil {
		return nil, err
	}
	return va, m.store.Add(cached)
}

func (m *memAttacher) Delete(context.Context, string, types.UID) error { return nil }

// memStatus is a StatusWriter that keeps nothing but a count.
type memStatus struct {
	mu     sync.Mutex
	writes int
}

var _ volumeattach.StatusWriter = &memStatus{}

func (s *memStatus) PatchVolumesAttached(_ context.Context, name string, _ []v1.AttachedVolume) (*v1.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: fmt.Sprint(1_000_000 + s.writes)}}, nil
}

// scaleCluster is a controller whose informer stores hold nodes x pods CSI volumes (trimmed
// as the adc binary keeps them), with in-memory writers and no API server.
type scaleCluster struct {
	c      *Controller
	vas    *memAttacher
	status *memStatus
	nodes  []string
}

func newScaleCluster(tb testing.TB, nodes, podsPerNode int) *scaleCluster {
	tb.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	vaStore := factory.Storage().V1().VolumeAttachments().Informer().GetIndexer()
	s := &scaleCluster{vas: &memAttacher{store: vaStore}, status: &memStatus{}}
	c, err := New(client, nil, factory, Options{Attachments: s.vas, NodeStatus: s.status,
		Recorder: record.NewFakeRecorder(100)})
	if err != nil {
		tb.Fatal(err)
	}
	s.c = c
	add := func(store cache.Indexer, obj interface{}) {
		cached, err := cached.Transform(obj)
		if err != nil {
			tb.Fatal(err)
		}
		if err := store.Add(cached); err != nil {
			tb.Fatal(err)
		}
	}
	const driver = "ebs.csi.aws.com"
	add(factory.Storage().V1().CSIDrivers().Informer().GetIndexer(),
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})
	nodeStore := factory.Core().V1().Nodes().Informer().GetIndexer()
	csiNodeStore := factory.Storage().V1().CSINodes().Informer().GetIndexer()
	podStore := factory.Core().V1().Pods().Informer().GetIndexer()
	pvStore := factory.Core().V1().PersistentVolumes().Informer().GetIndexer()
	pvcStore := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	for n := 0; n < nodes; n++ {
		name := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", n/250, n%250)
		s.nodes = append(s.nodes, name)
		add(nodeStore, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
				NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.36.3"}}})
		add(csiNodeStore, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{migration.MigratedPluginsAnnotation: "kubernetes.io/aws-ebs"}},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: "i-0123456789abcdef" + fmt.Sprint(n)}}}})
		for p := 0; p < podsPerNode; p++ {
			id := fmt.Sprintf("%d-%d", n, p)
			pvName, claimName := "pvc-0f1e2d3c-"+id, "data-db-"+id
			add(pvStore, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
				Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
					PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
						Driver: driver, VolumeHandle: "vol-0abc" + id, FSType: "ext4"}},
					ClaimRef: &v1.ObjectReference{Namespace: "apps", Name: claimName, UID: types.UID("uid-" + claimName)}},
				Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}})
			add(pvcStore, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: claimName, UID: types.UID("uid-" + claimName)},
				Spec:   v1.PersistentVolumeClaimSpec{VolumeName: pvName, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
				Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
			add(podStore, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db-" + id, UID: types.UID("uid-db-" + id)},
				Spec: v1.PodSpec{NodeName: name, Volumes: []v1.Volume{
					{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}},
					{Name: "kube-api-access-x7k2p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
				}},
				Status: v1.PodStatus{Phase: v1.PodPending}})
		}
	}
	return s
}

// attachAll runs what a cluster's attach storm makes adc do, per node: reconcile (decide and
// create the VolumeAttachments), the external-attacher marking them attached (the informer
// events), and the node status write that lists them.
func (s *scaleCluster) attachAll(ctx context.Context, tb testing.TB) {
	for _, n := range s.nodes {
		if _, err := s.c.syncNode(ctx, n); err != nil {
			tb.Fatal(err)
		}
		s.c.sendQueuedCreates(ctx)
	}
	s.vas.mu.Lock()
	created := s.vas.created
	s.vas.created = nil
	s.vas.mu.Unlock()
	for _, va := range created {
		attached := va.DeepCopy()
		attached.Status.Attached = true
		cached, err := cached.Transform(attached.DeepCopy())
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.vas.store.Update(cached); err != nil {
			tb.Fatal(err)
		}
		s.c.mem.Observed(attached)
		s.c.ops.AttachObserved(attached)
	}
	for _, n := range s.nodes {
		if _, err := s.c.nodeStatus.Sync(ctx, n); err != nil {
			tb.Fatal(err)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkClusterAttach is adc's own cost per volume, without an API server: decide,
// reconcile and list in node status every volume of a cluster, from informer stores trimmed
// as the adc binary keeps them. It reports CPU time per volume, the live heap per volume of
// the stores plus adc's own state, and the status writes per node. docs/performance.md
// extrapolates the Kubernetes envelope (5,000 nodes, 150,000 volumes) from it.
//
//	go test -run '^$' -bench BenchmarkClusterAttach -benchtime 1x ./pkg/adc/
func BenchmarkClusterAttach(b *testing.B) {
	for _, size := range []struct{ nodes, pods int }{{1000, 10}, {5000, 10}, {5000, 30}} {
		volumes := size.nodes * size.pods
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.pods), func(b *testing.B) {
			ctx := klog.NewContext(context.Background(), klog.Background().V(0))
			var elapsed time.Duration
			var heapPerVolume float64
			var writes int
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				s := newScaleCluster(b, size.nodes, size.pods)
				b.StartTimer()
				start := time.Now()
				s.attachAll(ctx, b)
				elapsed += time.Since(start)
				b.StopTimer()
				heapPerVolume = float64(heapInUse()-before) / float64(volumes)
				if got := len(s.c.Snapshot()); got != volumes*2 {
					b.Fatalf("%d pairs in the snapshot, want %d", got, volumes*2)
				}
				writes = s.status.writes
				runtime.KeepAlive(s)
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*volumes), "ns/volume")
			b.ReportMetric(heapPerVolume, "heap-B/volume")
			b.ReportMetric(float64(writes)/float64(size.nodes), "status-writes/node")
		})
	}
}
