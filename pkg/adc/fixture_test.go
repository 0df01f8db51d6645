package adc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/volumeattach"
)

// fixture is a whole Controller built with New on informer stores the test fills by hand
// (the informers never run) and an API (a fake clientset) the test controls, with recording
// write boundaries. The test plays client-go: it decides when a store changes and when, or
// whether, the handlers hear of it.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	c      *Controller
	client *fake.Clientset
	clk    *testingclock.FakeClock
	att    *recordingAttachments
	status *apiStatus
	// actions is every API write and fresh read the controller made, in order (actionLog).
	actions *actionLog

	nodes, pods, pvs, pvcs, csiNodes, drivers, vas cache.Indexer
}

// testDriver is the CSI driver of the fixture's volumes.
const testDriver = "d"

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	f := &fixture{t: t, ctx: ctx, client: client, clk: testingclock.NewFakeClock(time.Unix(1_000_000, 0))}
	f.actions = &actionLog{}
	f.status = &apiStatus{api: client, log: f.actions}
	f.att = &recordingAttachments{api: client, log: f.actions}
	client.PrependReactor("get", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.actions.add("get node " + a.(clienttesting.GetAction).GetName())
		return false, nil, nil
	})
	opts.Attachments, opts.NodeStatus, opts.Clock = f.att, f.status, f.clk
	if opts.Recorder == nil {
		opts.Recorder = record.NewFakeRecorder(1000)
	}
	c, err := New(client, nil, factory, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() { c.nodeQueue.ShutDown(); c.statusQueue.ShutDown(); c.creates.ShutDown() })
	f.nodes = factory.Core().V1().Nodes().Informer().GetIndexer()
	f.pods = factory.Core().V1().Pods().Informer().GetIndexer()
	f.pvs = factory.Core().V1().PersistentVolumes().Informer().GetIndexer()
	f.pvcs = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	f.csiNodes = factory.Storage().V1().CSINodes().Informer().GetIndexer()
	f.drivers = factory.Storage().V1().CSIDrivers().Informer().GetIndexer()
	f.vas = factory.Storage().V1().VolumeAttachments().Informer().GetIndexer()
	f.store(f.drivers, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: testDriver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})
	return f
}

// store puts objects into an informer store only, as client-go does before it calls the
// handlers.
func (f *fixture) store(s cache.Indexer, objs ...interface{}) {
	f.t.Helper()
	for _, o := range objs {
		if err := s.Update(o); err != nil {
			f.t.Fatal(err)
		}
	}
}

// api puts objects into the API server (the fake clientset).
func (f *fixture) api(objs ...interface{}) {
	f.t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *v1.Node:
			_, err = f.client.CoreV1().Nodes().Create(f.ctx, o, metav1.CreateOptions{})
		case *storagev1.VolumeAttachment:
			// The API server records the creator as the request's field manager.
			opts := metav1.CreateOptions{}
			if len(o.ManagedFields) > 0 {
				opts.FieldManager = o.ManagedFields[0].Manager
			}
			_, err = f.client.StorageV1().VolumeAttachments().Create(f.ctx, o, opts)
		default:
			err = fmt.Errorf("fixture.api: unsupported %T", o)
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// node is a managed, Ready node whose CSINode lists the test driver; it is put in the cache,
// the API server and the CSINode cache.
func (f *fixture) node(name string, mutate ...func(*v1.Node)) *v1.Node {
	f.t.Helper()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
		Annotations: map[string]string{migration.ManagedAnnotation: "true"}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.36.3"}}}
	for _, m := range mutate {
		m(n)
	}
	f.store(f.nodes, n)
	f.api(n.DeepCopy())
	f.store(f.csiNodes, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: testDriver, NodeID: "id-" + name}}}})
	return n
}

// volume is a bound CSI PersistentVolume of the test driver and its claim.
func (f *fixture) volume(name, handle string, mode v1.PersistentVolumeAccessMode) {
	f.store(f.pvs, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{mode},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "claim-" + name, UID: types.UID("uid-claim-" + name)}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}})
	f.store(f.pvcs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim-" + name, UID: types.UID("uid-claim-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}})
}

// pod is a running pod on node using the claim of each named PersistentVolume; the pod handler
// hears of it.
func (f *fixture) pod(name, node string, pvNames ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	for _, pv := range pvNames {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: pv, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + pv}}})
	}
	f.store(f.pods, p)
	f.c.podHandler().OnAdd(p, false)
	return p
}

// deletePod removes a pod from the cache and tells the handler.
func (f *fixture) deletePod(p *v1.Pod) {
	f.t.Helper()
	if err := f.pods.Delete(p); err != nil {
		f.t.Fatal(err)
	}
	f.c.podHandler().OnDelete(p)
}

// va is the VolumeAttachment adc creates for the test driver's handle on node, as stored.
func (f *fixture) va(handle, pv, node, uid, rv string, attached bool) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName(handle, testDriver, node), UID: types.UID(uid), ResourceVersion: rv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached},
	}
}

// syncNode reconciles the node; a reconcile error fails the test (a negative assertion
// after a failed reconcile would pass for nothing): a test that expects one calls
// syncNodeAllowErr.
func (f *fixture) syncNode(name string) {
	f.t.Helper()
	if _, err := f.c.syncNode(f.ctx, name); err != nil {
		f.t.Fatalf("syncNode %s: %v", name, err)
	}
	f.afterSync(name)
}

// syncNodeAllowErr reconciles the node and logs a reconcile error.
func (f *fixture) syncNodeAllowErr(name string) {
	f.t.Helper()
	if _, err := f.c.syncNode(f.ctx, name); err != nil {
		f.t.Logf("syncNode %s: %v", name, err)
	}
	f.afterSync(name)
}

func (f *fixture) afterSync(name string) {
	f.t.Helper()
	f.checkMemory("syncNode " + name)
	f.c.sendQueuedCreates(f.ctx)
	f.checkMemory("creates of " + name)
}

// settleNode runs up to rounds of the node's reconcile and status sync, the Node informer
// catching up with the API server after each, until a VolumeAttachment is deleted.
func (f *fixture) settleNode(name string, rounds int) {
	f.t.Helper()
	for i := 0; i < rounds && len(f.att.deleted()) == 0; i++ {
		f.syncNode(name)
		f.syncStatus(name)
		apiNode, err := f.client.CoreV1().Nodes().Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		f.store(f.nodes, apiNode)
	}
}

// checkMemory fails the test if an invariant of the controller's memory broke at step.
func (f *fixture) checkMemory(step string) {
	f.t.Helper()
	if err := f.c.mem.Check(); err != nil {
		f.t.Errorf("after %s: %v", step, err)
	}
}

func (f *fixture) syncStatus(name string) {
	f.t.Helper()
	if _, err := f.c.nodeStatus.Sync(f.ctx, name); err != nil {
		f.t.Fatalf("node status sync %s: %v", name, err)
	}
	f.checkMemory("node status sync " + name)
}

// recordingAttachments is an AttachmentWriter over the fake clientset that records each call
// and can hold a Delete until the test lets it go. Nothing reaches an informer store by
// itself: the test decides when the store and the handlers see a write.
type recordingAttachments struct {
	api *fake.Clientset
	log *actionLog

	mu      sync.Mutex
	creates []*storagev1.VolumeAttachment
	deletes []string
	rv      int
	// deleteEntered and deleteRelease, when set, make Delete signal and wait; createEntered
	// and createRelease the same for Create. createErr, when set, is every Create's answer.
	deleteEntered chan string
	deleteRelease chan struct{}
	createEntered chan string
	createRelease chan struct{}
	createErr     error
}

var _ volumeattach.AttachmentWriter = &recordingAttachments{}

func (r *recordingAttachments) Create(ctx context.Context, va *storagev1.VolumeAttachment) (*storagev1.VolumeAttachment, error) {
	r.mu.Lock()
	entered, release, failure := r.createEntered, r.createRelease, r.createErr
	r.mu.Unlock()
	if entered != nil {
		entered <- va.Name
		<-release
	}
	if failure != nil {
		r.log.add("create " + va.Name + " refused")
		return nil, failure
	}
	r.mu.Lock()
	r.rv++
	stored := va.DeepCopy()
	stored.UID = types.UID(fmt.Sprintf("uid-created-%d", r.rv))
	stored.ResourceVersion = fmt.Sprint(1000 + r.rv)
	r.creates = append(r.creates, stored)
	r.mu.Unlock()
	r.log.add("create " + va.Name)
	if _, err := r.api.StorageV1().VolumeAttachments().Create(ctx, stored, metav1.CreateOptions{FieldManager: volumeattach.FieldManager}); err != nil {
		return nil, err
	}
	return stored, nil
}

func (r *recordingAttachments) Delete(ctx context.Context, name string, uid types.UID) error {
	r.mu.Lock()
	r.deletes = append(r.deletes, name)
	entered, release := r.deleteEntered, r.deleteRelease
	r.mu.Unlock()
	r.log.add("delete " + name)
	if entered != nil {
		entered <- name
		<-release
	}
	return (&volumeattach.ClientAttachmentWriter{Client: r.api}).Delete(ctx, name, uid)
}

// createdOn returns the VolumeAttachments created for node.
func (r *recordingAttachments) createdOn(node string) []*storagev1.VolumeAttachment {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*storagev1.VolumeAttachment
	for _, va := range r.creates {
		if va.Spec.NodeName == node {
			out = append(out, va)
		}
	}
	return out
}

func (r *recordingAttachments) deleted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.deletes...)
}

// apiStatus is a StatusWriter that writes the fake API server's Node (not the informer's) and
// remembers every write.
type apiStatus struct {
	api    *fake.Clientset
	log    *actionLog
	mu     sync.Mutex
	writes [][]v1.AttachedVolume
}

var _ volumeattach.StatusWriter = &apiStatus{}

func (s *apiStatus) PatchVolumesAttached(ctx context.Context, name string, vols []v1.AttachedVolume) (*v1.Node, error) {
	s.mu.Lock()
	s.writes = append(s.writes, vols)
	s.mu.Unlock()
	s.log.add(fmt.Sprintf("patch node %s status %v", name, attachedNames(vols)))
	obj, err := s.api.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return nil, err
	}
	n := obj.(*v1.Node).DeepCopy()
	n.Status.VolumesAttached = vols
	n.ResourceVersion = ""
	return s.api.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
}

// lastWrite returns the last status.volumesAttached written, and whether any was.
func (s *apiStatus) lastWrite() ([]v1.AttachedVolume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.writes) == 0 {
		return nil, false
	}
	return s.writes[len(s.writes)-1], true
}

func attachedNames(vols []v1.AttachedVolume) []string {
	out := make([]string, 0, len(vols))
	for _, v := range vols {
		out = append(out, string(v.Name))
	}
	return out
}

// eventMemoryLen and heldMemoryLen count what the controller remembers of Events sent and of
// held pairs.
func eventMemoryLen(c *Controller) int { return c.mem.Sizes().EventNodes }

func heldMemoryLen(c *Controller) int { return c.mem.Sizes().HeldNodes }

// actionLog records, in order, what the controller asked of the API server: VolumeAttachment
// creates and deletes, node status writes, and fresh Node reads.
type actionLog struct {
	mu  sync.Mutex
	all []string
}

func (l *actionLog) add(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, a)
}

// take returns the actions recorded since the last take.
func (l *actionLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.all
	l.all = nil
	return out
}
