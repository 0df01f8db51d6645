package simulator

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/test/testinformers"
)

// SimulatedKubelets is a SIMULATION of the kubelets of a set of managed nodes, for tests that
// need the kubelet's side of the attach/detach contract and not only its registration: each
// simulated kubelet heartbeats its node Ready and runs a volume manager that "mounts" a CSI
// volume of a pod scheduled to its node only once the volume is listed in the node's
// status.volumesAttached (then reports it in status.volumesInUse), and "unmounts" it a short
// random while after the last such pod is gone or terminated (then drops it from
// status.volumesInUse). It writes status.volumesInUse with a merge patch on nodes/status and
// never touches status.volumesAttached, which belongs to the attach/detach controller. Nothing
// is mounted and no container runs.
//
// A pod is terminated, and wants no volumes, when its phase is Succeeded or Failed, or when it
// is being deleted (deletionTimestamp set) and none of its containers runs (upstream's
// IsPodTerminated, the rule of the attach/detach controller). As a real kubelet's status
// manager does, the simulated kubelet finishes the delete of such a pod (grace period 0, with
// its UID as precondition) once none of its volumes is mounted for it any more: a pod whose
// grace-0 delete was cut between the API server's two writes (deletionTimestamp, then the
// delete) does not stay forever.
type SimulatedKubelets struct {
	// Client registers nodes and patches their status.
	Client kubernetes.Interface
	// Heartbeat is how often a running kubelet renews its Ready condition (default 5s).
	Heartbeat time.Duration
	// Sync is how often each kubelet's volume manager compares its pods with its node
	// status (default 100ms).
	Sync time.Duration
	// UnmountMin and UnmountMax bound the random time between the last pod of a volume
	// leaving the node and the volume leaving status.volumesInUse (default 100ms-800ms).
	UnmountMin, UnmountMax time.Duration
	// Seed seeds the random unmount times, so a run can be reproduced: the unmount time of a
	// volume is a function of the seed, the node, the volume and how many times it was
	// unmounted there before, not of the order in which the kubelets run.
	Seed uint64
	// MigratedPlugins, when set, makes each kubelet write its node's CSINode with this
	// migrated-plugins annotation (comma-separated) and CSIDrivers, and "mount" the pods'
	// inline volumes of those plugins under their CSI unique name (the kubelet's name for a
	// migrated volume), e.g. kubernetes.io/gce-pd with pd.csi.storage.gke.io.
	MigratedPlugins string
	CSIDrivers      []string

	mu      sync.Mutex
	nodes   map[string]*simulatedNode
	pods    corelisters.PodLister
	nodeLis corelisters.NodeLister
	claims  corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	ctx     context.Context
	patches atomic.Int64
}

// simulatedNode is one kubelet's state: what it has mounted and since when a mounted volume
// has had no pod.
type simulatedNode struct {
	name     string
	stopped  atomic.Bool // the kubelet is down: no heartbeat, no volume reporting
	busy     sync.Mutex  // held during one pass, so Stop returns only after it
	cancel   context.CancelFunc
	mounted  map[string]time.Time // unique volume name -> when to unmount (zero while used)
	unmounts map[string]int       // unique volume name -> unmounts so far, for the seeded delay
	// deleted holds the terminated pods whose delete this kubelet finished and its pod
	// informer may still show, so the delete is not sent again every pass.
	deleted map[types.UID]bool
}

// deletingPod is a pod of the node that is being deleted and wants no volumes, with the unique
// names of its volumes.
type deletingPod struct {
	pod     *v1.Pod
	volumes []string
}

// Run starts the informers the simulated kubelets read. It returns once they have synced.
func (k *SimulatedKubelets) Run(ctx context.Context) error {
	if k.Heartbeat <= 0 {
		k.Heartbeat = 5 * time.Second
	}
	if k.Sync <= 0 {
		k.Sync = 100 * time.Millisecond
	}
	if k.UnmountMin <= 0 && k.UnmountMax <= 0 {
		k.UnmountMin, k.UnmountMax = 100*time.Millisecond, 800*time.Millisecond
	}
	k.nodes = map[string]*simulatedNode{}
	k.ctx = ctx
	factory := informers.NewSharedInformerFactory(k.Client, 0)
	k.pods = factory.Core().V1().Pods().Lister()
	k.nodeLis = factory.Core().V1().Nodes().Lister()
	k.claims = factory.Core().V1().PersistentVolumeClaims().Lister()
	k.pvs = factory.Core().V1().PersistentVolumes().Lister()
	if err := testinformers.Start(ctx, factory); err != nil {
		return fmt.Errorf("simulated kubelets: %w", err)
	}
	return nil
}

// Patches returns how many volumesInUse patches the simulated kubelets have written.
func (k *SimulatedKubelets) Patches() int64 { return k.patches.Load() }

// AddNode registers a managed, Ready node and starts its simulated kubelet.
func (k *SimulatedKubelets) AddNode(ctx context.Context, name string) error {
	if _, err := (Kubelet{Client: k.Client}).RegisterNode(ctx, name, true); err != nil {
		return err
	}
	if k.MigratedPlugins != "" {
		if err := (Kubelet{Client: k.Client}).ReportCSINode(ctx, name, k.MigratedPlugins, k.CSIDrivers...); err != nil {
			return err
		}
	}
	nctx, cancel := context.WithCancel(k.ctx)
	n := &simulatedNode{name: name, cancel: cancel, mounted: map[string]time.Time{}, unmounts: map[string]int{}, deleted: map[types.UID]bool{}}
	k.mu.Lock()
	k.nodes[name] = n
	k.mu.Unlock()
	go k.runNode(nctx, n)
	return nil
}

// Stop stops the kubelet of node as a crash or a network partition does: its heartbeats and
// its volume reporting stop, status.volumesInUse stays as it was. The node's Ready
// condition is left to the caller.
func (k *SimulatedKubelets) Stop(node string) {
	if n := k.node(node); n != nil {
		n.stopped.Store(true)
		// Wait for a pass under way, so no heartbeat lands after Stop.
		n.busy.Lock()
		defer n.busy.Unlock()
	}
}

// Resume restarts a stopped kubelet: it reports its node Ready (as of now) and reconciles its
// volumes with the pods still scheduled to it.
func (k *SimulatedKubelets) Resume(ctx context.Context, node string) error {
	n := k.node(node)
	if n == nil {
		return fmt.Errorf("simulated kubelets: no node %s", node)
	}
	if err := (Kubelet{Client: k.Client}).SetReady(ctx, node, true, time.Now()); err != nil {
		return err
	}
	n.stopped.Store(false)
	return nil
}

// Remove ends the kubelet of a node that was (or is about to be) deleted.
func (k *SimulatedKubelets) Remove(node string) {
	k.mu.Lock()
	n := k.nodes[node]
	delete(k.nodes, node)
	k.mu.Unlock()
	if n != nil {
		n.cancel()
	}
}

// Running returns whether node has a kubelet that is not stopped.
func (k *SimulatedKubelets) Running(node string) bool {
	n := k.node(node)
	return n != nil && !n.stopped.Load()
}

func (k *SimulatedKubelets) node(name string) *simulatedNode {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nodes[name]
}

// unmountDelay is how long after its last pod left node the volume is unmounted, the n-th
// time it is there: seeded, and independent of the order the kubelets run in.
func (k *SimulatedKubelets) unmountDelay(node, volume string, n int) time.Duration {
	span := k.UnmountMax - k.UnmountMin
	if span <= 0 {
		return k.UnmountMin
	}
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%s/%s/%d", k.Seed, node, volume, n)
	return k.UnmountMin + time.Duration(h.Sum64()%uint64(span))
}

func (k *SimulatedKubelets) runNode(ctx context.Context, n *simulatedNode) {
	logger := klog.FromContext(ctx).WithValues("node", n.name)
	lastBeat := time.Now()
	_ = wait.PollUntilContextCancel(ctx, k.Sync, false, func(ctx context.Context) (bool, error) {
		n.busy.Lock()
		defer n.busy.Unlock()
		if n.stopped.Load() {
			return false, nil
		}
		if time.Since(lastBeat) >= k.Heartbeat {
			if err := k.heartbeat(ctx, n.name); err != nil {
				logger.V(4).Info("Simulated kubelet heartbeat failed", "err", err)
			} else {
				lastBeat = time.Now()
			}
		}
		if err := k.syncVolumes(ctx, n); err != nil {
			logger.V(4).Info("Simulated kubelet volume sync failed", "err", err)
		}
		return false, nil
	})
}

// heartbeat renews the Ready condition's heartbeat; the strategic merge patch keys
// conditions by type, so lastTransitionTime stays.
func (k *SimulatedKubelets) heartbeat(ctx context.Context, node string) error {
	return (Kubelet{Client: k.Client}).Heartbeat(ctx, node)
}

// syncVolumes is one pass of the simulated volume manager.
func (k *SimulatedKubelets) syncVolumes(ctx context.Context, n *simulatedNode) error {
	node, err := k.nodeLis.Get(n.name)
	if err != nil {
		return nil // not in the cache (yet, or any more)
	}
	attached := map[string]bool{}
	for _, av := range node.Status.VolumesAttached {
		attached[string(av.Name)] = true
	}
	wanted, deleting, err := k.wantedVolumes(n.name)
	if err != nil {
		return err
	}
	now := time.Now()
	for v := range wanted {
		if _, ok := n.mounted[v]; ok || attached[v] {
			n.mounted[v] = time.Time{} // mounted (again), in use
		}
	}
	for v, unmountAt := range n.mounted {
		if wanted[v] {
			continue
		}
		switch {
		case unmountAt.IsZero():
			n.mounted[v] = now.Add(k.unmountDelay(n.name, v, n.unmounts[v]))
			n.unmounts[v]++
		case !now.Before(unmountAt):
			delete(n.mounted, v)
		}
	}
	inUse := make([]string, 0, len(n.mounted))
	for v := range n.mounted {
		inUse = append(inUse, v)
	}
	slices.Sort(inUse)
	reported := make([]string, 0, len(node.Status.VolumesInUse))
	for _, v := range node.Status.VolumesInUse {
		reported = append(reported, string(v))
	}
	slices.Sort(reported)
	if !slices.Equal(inUse, reported) {
		if err := (Kubelet{Client: k.Client}).SetVolumesInUse(ctx, n.name, inUse...); err != nil {
			return err
		}
		k.patches.Add(1)
	}
	return k.finishDeletes(ctx, n, deleting)
}

// finishDeletes deletes (grace period 0, UID precondition) each terminated pod of the node
// that is being deleted once none of its volumes is mounted for it: a volume is, while it
// waits to be unmounted; one another pod of the node uses stays mounted for that pod only.
func (k *SimulatedKubelets) finishDeletes(ctx context.Context, n *simulatedNode, deleting []deletingPod) error {
	listed := make(map[types.UID]bool, len(deleting))
	var errs []error
	for _, d := range deleting {
		listed[d.pod.UID] = true
		if n.deleted[d.pod.UID] || slices.ContainsFunc(d.volumes, func(v string) bool {
			unmountAt, ok := n.mounted[v]
			return ok && !unmountAt.IsZero()
		}) {
			continue
		}
		err := k.Client.CoreV1().Pods(d.pod.Namespace).Delete(ctx, d.pod.Name,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(d.pod.UID))})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Simulated kubelet finished the delete of a terminated pod", "node", n.name, "pod", klog.KObj(d.pod))
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone, or another pod of that name (the precondition failed).
		default:
			errs = append(errs, fmt.Errorf("deleting terminated pod %s/%s: %w", d.pod.Namespace, d.pod.Name, err))
			continue
		}
		n.deleted[d.pod.UID] = true
	}
	for uid := range n.deleted {
		if !listed[uid] {
			delete(n.deleted, uid) // the informer shows the delete
		}
	}
	return errors.Join(errs...)
}

// wantedVolumes returns the unique names of the CSI volumes of the pods scheduled to node
// that are not terminated, and the terminated pods of node that are being deleted.
func (k *SimulatedKubelets) wantedVolumes(node string) (map[string]bool, []deletingPod, error) {
	pods, err := k.pods.List(labels.Everything())
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	out := map[string]bool{}
	var deleting []deletingPod
	for _, pod := range pods {
		if pod.Spec.NodeName != node {
			continue
		}
		if podTerminated(pod) {
			if pod.DeletionTimestamp != nil {
				deleting = append(deleting, deletingPod{pod: pod, volumes: k.podVolumes(pod)})
			}
			continue
		}
		for _, v := range k.podVolumes(pod) {
			out[v] = true
		}
	}
	return out, deleting, nil
}

// podVolumes returns the unique names of the CSI volumes of pod: those of its claims, and with
// MigratedPlugins the CSI form of its inline volumes of a migrated plugin.
func (k *SimulatedKubelets) podVolumes(pod *v1.Pod) []string {
	var out []string
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			if unique := k.migratedInline(&vol, pod.Namespace); unique != "" {
				out = append(out, unique)
			}
			continue
		}
		claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(vol.PersistentVolumeClaim.ClaimName)
		if err != nil || claim.Spec.VolumeName == "" {
			continue
		}
		pv, err := k.pvs.Get(claim.Spec.VolumeName)
		if err != nil || pv.Spec.CSI == nil {
			continue
		}
		out = append(out, CSIUniqueName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle))
	}
	return out
}

// podTerminated is upstream's IsPodTerminated: the pod's phase is Succeeded or Failed, or it is
// being deleted and none of its containers (init, app or ephemeral) runs. A terminated pod
// wants no volumes.
func podTerminated(pod *v1.Pod) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return true
	}
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, st := range statuses {
			if st.State.Terminated == nil && st.State.Waiting == nil {
				return false
			}
		}
	}
	return true
}

// migratedInline returns the CSI unique name of an inline volume of a migrated plugin, ""
// for any other volume.
func (k *SimulatedKubelets) migratedInline(vol *v1.Volume, namespace string) string {
	if k.MigratedPlugins == "" || !translator.IsInlineMigratable(vol) {
		return ""
	}
	plugin, err := translator.GetInTreePluginNameFromSpec(nil, vol)
	if err != nil || !slices.Contains(strings.Split(k.MigratedPlugins, ","), plugin) {
		return ""
	}
	pv, err := translator.TranslateInTreeInlineVolumeToCSI(klog.Background(), vol, namespace)
	if err != nil || pv.Spec.CSI == nil {
		return ""
	}
	return CSIUniqueName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
}

var translator = csitrans.New()

// CSIUniqueName is the unique volume name the kubelet and the attach/detach controller use
// for a CSI volume in node status.
func CSIUniqueName(driver, handle string) string { return "kubernetes.io/csi/" + driver + "^" + handle }
