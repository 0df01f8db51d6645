package cached_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/adc"
	"github.com/migration-aware/adc/pkg/adc/internal/cached"
	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// trimFixture is a cluster with every kind of object and volume adc decides on, each object
// carrying the bulk the transform drops (managedFields, kubectl's last-applied copy, a pod's
// containers, a node's images), so that dropping the wrong field shows as a different
// decision.
func trimFixture() (pods []v1.Pod, objs migration.Objects, vas []storagev1.VolumeAttachment) {
	bulk := func(m *metav1.ObjectMeta) {
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)}}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = strings.Repeat("x", 2048)
		m.Annotations["team"] = "storage"
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["app"] = "db"
	}
	ready := func(s v1.ConditionStatus, since time.Time) []v1.NodeCondition {
		return []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse},
			{Type: v1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(since), Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		}
	}
	old := time.Now().Add(-time.Hour)
	node := func(name string, managed bool, cond v1.ConditionStatus, taints ...v1.Taint) v1.Node {
		n := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
		bulk(&n.ObjectMeta)
		if managed {
			n.Annotations[migration.ManagedAnnotation] = "true"
		}
		n.Spec.Taints = taints
		n.Status = v1.NodeStatus{
			Conditions:      ready(cond, old),
			Capacity:        v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
			Allocatable:     v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
			Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:          []v1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}},
			NodeInfo:        v1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Debian", KernelVersion: "6.1"},
			VolumesAttached: []v1.AttachedVolume{{Name: "kubernetes.io/csi/csi.example.com^h-old", DevicePath: ""}},
			VolumesInUse:    []v1.UniqueVolumeName{"kubernetes.io/csi/csi.example.com^h-old"},
		}
		return n
	}
	objs.Nodes = []v1.Node{
		node("n1", true, v1.ConditionTrue),
		node("n2", true, v1.ConditionFalse, v1.Taint{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}),
		node("n3", false, v1.ConditionTrue),
		node("n4", true, v1.ConditionTrue),
	}
	csiNode := func(name, migrated string) storagev1.CSINode {
		n := storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		bulk(&n.ObjectMeta)
		if migrated != "" {
			n.Annotations[migration.MigratedPluginsAnnotation] = migrated
		}
		n.Spec.Drivers = []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: name}, {Name: "pd.csi.storage.gke.io", NodeID: name}}
		return n
	}
	// n4 has no CSINode: its migratable volumes wait.
	objs.CSINodes = []storagev1.CSINode{csiNode("n1", "kubernetes.io/gce-pd"), csiNode("n2", ""), csiNode("n3", "kubernetes.io/gce-pd")}
	driver := func(name string, attach bool) storagev1.CSIDriver {
		d := storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(attach)}}
		bulk(&d.ObjectMeta)
		return d
	}
	objs.CSIDrivers = []storagev1.CSIDriver{driver("csi.example.com", true), driver("noattach.example.com", false), driver("pd.csi.storage.gke.io", true)}

	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	pv := func(name string, src v1.PersistentVolumeSource, claim string) v1.PersistentVolume {
		p := v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: src, AccessModes: rwo,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}
		if claim != "" {
			p.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", ResourceVersion: "5",
				Namespace: "ns", Name: claim, UID: types.UID("uid-" + claim)}
		}
		p.Status.Phase = v1.VolumeBound
		bulk(&p.ObjectMeta)
		return p
	}
	pvc := func(name, volume string, owner *metav1.OwnerReference) v1.PersistentVolumeClaim {
		c := v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: volume, AccessModes: rwo}}
		c.Status.Phase = v1.ClaimBound
		if owner != nil {
			c.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		bulk(&c.ObjectMeta)
		return c
	}
	csi := func(drv, handle string) v1.PersistentVolumeSource {
		return v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}
	}
	objs.PVs = []v1.PersistentVolume{
		pv("pv-csi", csi("csi.example.com", "h1"), "c-csi"),
		pv("pv-csi2", csi("csi.example.com", "h2"), "c-csi2"),
		pv("pv-gce", v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1"}}, "c-gce"),
		pv("pv-ebs", v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}, "c-ebs"),
		pv("pv-iscsi", v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.9:3260", IQN: "iqn.2026-01.example:t", Lun: 0}}, "c-iscsi"),
		pv("pv-nfs", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/x"}}, "c-nfs"),
		pv("pv-noattach", csi("noattach.example.com", "h3"), "c-noattach"),
		pv("pv-nosource", v1.PersistentVolumeSource{}, "c-nosource"),
		pv("pv-eph", csi("csi.example.com", "h-eph"), "p1-scratch"),
		pv("pv-csi4", csi("csi.example.com", "h4"), "c-csi4"),
		pv("pv-csi5", csi("csi.example.com", "h5"), "c-csi5"),
	}
	podOwner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p1", UID: "uid-p1", Controller: ptr.To(true)}
	objs.PVCs = []v1.PersistentVolumeClaim{
		pvc("c-csi", "pv-csi", nil), pvc("c-csi2", "pv-csi2", nil), pvc("c-gce", "pv-gce", nil), pvc("c-ebs", "pv-ebs", nil),
		pvc("c-iscsi", "pv-iscsi", nil), pvc("c-nfs", "pv-nfs", nil), pvc("c-noattach", "pv-noattach", nil),
		pvc("c-nosource", "pv-nosource", nil), pvc("p1-scratch", "pv-eph", podOwner), pvc("c-csi4", "pv-csi4", nil), pvc("c-csi5", "pv-csi5", nil),
	}
	unbound := pvc("c-pending", "", nil)
	unbound.Status.Phase = v1.ClaimPending
	objs.PVCs = append(objs.PVCs, unbound)

	claim := func(name, claimName string) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}
	}
	running := []v1.ContainerStatus{{Name: "app", Ready: true, Image: "app:1", ImageID: "sha256:abc", ContainerID: "containerd://1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(old)}}}}
	terminated := []v1.ContainerStatus{{Name: "app", Image: "app:1",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: "bye"}}}}
	pod := func(name, node string, phase v1.PodPhase, statuses []v1.ContainerStatus, vols ...v1.Volume) v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.PodSpec{NodeName: node, Volumes: vols, ServiceAccountName: "default",
				Containers: []v1.Container{{Name: "app", Image: "app:1", Command: []string{"sleep", "inf"},
					Env:          []v1.EnvVar{{Name: "X", Value: strings.Repeat("y", 512)}},
					VolumeMounts: []v1.VolumeMount{{Name: vols[0].Name, MountPath: "/data"}}}}},
			Status: v1.PodStatus{Phase: phase, ContainerStatuses: statuses, PodIP: "10.1.0.1",
				Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}}
		bulk(&p.ObjectMeta)
		return p
	}
	token := v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
	}}}}
	deleted := pod("p-deleted", "n2", v1.PodRunning, terminated, claim("data", "c-csi2"))
	deleted.DeletionTimestamp = ptr.To(metav1.NewTime(old))
	deletedRunning := pod("p-deleted-running", "n1", v1.PodRunning, running, claim("data", "c-csi4"))
	deletedRunning.DeletionTimestamp = ptr.To(metav1.NewTime(old))
	pods = []v1.Pod{
		pod("p1", "n1", v1.PodRunning, running,
			claim("csi", "c-csi"), claim("gce", "c-gce"), claim("ebs", "c-ebs"), claim("iscsi", "c-iscsi"),
			claim("nfs", "c-nfs"), claim("noattach", "c-noattach"), claim("nosource", "c-nosource"), claim("pending", "c-pending"),
			claim("missing", "c-missing"), token,
			v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			v1.Volume{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
			v1.Volume{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "labels"}}}}},
			v1.Volume{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			v1.Volume{Name: "inline-gce", VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-2"}}},
			v1.Volume{Name: "inline-csi", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "noattach.example.com"}}},
			v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
		),
		deleted,
		deletedRunning,
		pod("p-done", "n1", v1.PodSucceeded, terminated, claim("data", "c-csi2")),
		pod("p-unmanaged", "n3", v1.PodRunning, running, claim("data", "c-gce")),
		pod("p-nocsinode", "n4", v1.PodRunning, running, claim("data", "c-gce"), claim("csi", "c-csi5")),
		pod("p-unscheduled", "", v1.PodPending, nil, claim("data", "c-csi")),
	}
	va := storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: migration.VolumeAttachmentName("h-old", "csi.example.com", "n1")},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "n1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-old")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/xvdba"}}}
	bulk(&va.ObjectMeta)
	return pods, objs, []storagev1.VolumeAttachment{va}
}

// trimmed returns deep copies of the fixture passed through the informer transform.
func trimmed(t *testing.T, pods []v1.Pod, objs migration.Objects, vas []storagev1.VolumeAttachment) ([]v1.Pod, migration.Objects, []storagev1.VolumeAttachment) {
	t.Helper()
	return trimAll(t, pods), migration.Objects{
		Nodes:      trimAll(t, objs.Nodes),
		PVs:        trimAll(t, objs.PVs),
		PVCs:       trimAll(t, objs.PVCs),
		CSINodes:   trimAll(t, objs.CSINodes),
		CSIDrivers: trimAll(t, objs.CSIDrivers),
	}, trimAll(t, vas)
}

// trimAll returns trimmed deep copies of objs, which stay as they are.
func trimAll[T any, PT interface {
	*T
	runtime.Object
}](t *testing.T, objs []T) []T {
	t.Helper()
	out := make([]T, len(objs))
	for i := range objs {
		cp := PT(&objs[i]).DeepCopyObject().(PT)
		if _, err := cached.TrimInformerObjects(cp); err != nil {
			t.Fatalf("TrimInformerObjects: %v", err)
		}
		out[i] = *cp
	}
	return out
}

func TestTrimInformerObjectsDropsWhatADCNeverReads(t *testing.T) {
	pods, objs, vas := trimFixture()
	tp, to, tv := trimmed(t, pods, objs, vas)
	p, n := tp[0], to.Nodes[0]
	switch {
	case p.ManagedFields != nil || n.ManagedFields != nil || to.PVs[0].ManagedFields != nil || tv[0].ManagedFields != nil:
		t.Error("managedFields kept")
	case tv[0].Status.AttachmentMetadata != nil || !tv[0].Status.Attached:
		t.Errorf("VolumeAttachment status: want only the attachment metadata dropped, got %+v", tv[0].Status)
	case p.Annotations != nil || p.Labels != nil:
		t.Errorf("pod labels and annotations kept: %v %v", p.Labels, p.Annotations)
	case n.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" || n.Annotations["team"] != "storage" || n.Labels["app"] != "db":
		t.Errorf("node annotations: want only kubectl's last-applied copy dropped, got %v", n.Annotations)
	case to.PVs[0].Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" || to.PVs[0].Annotations["team"] != "storage" || to.PVs[0].Labels["app"] != "db":
		t.Errorf("volume labels and annotations: want only kubectl's last-applied copy dropped, got %v %v", to.PVs[0].Labels, to.PVs[0].Annotations)
	case to.PVCs[0].Annotations != nil || to.PVCs[0].Labels != nil:
		t.Errorf("claim labels and annotations kept: %v %v", to.PVCs[0].Labels, to.PVCs[0].Annotations)
	case len(p.Spec.Containers) != 0 || p.Spec.ServiceAccountName != "" || len(p.Status.Conditions) != 0 || p.Status.PodIP != "":
		t.Errorf("pod spec/status not trimmed: %+v %+v", p.Spec, p.Status)
	case len(p.Spec.Volumes) != len(pods[0].Spec.Volumes):
		t.Errorf("pod volumes: %d, want all %d", len(p.Spec.Volumes), len(pods[0].Spec.Volumes))
	case len(n.Status.Images) != 0 || n.Status.Capacity != nil || n.Status.NodeInfo.OSImage != "":
		t.Errorf("node status not trimmed: %+v", n.Status)
	case n.Status.NodeInfo.KubeletVersion != "v1.36.3" || len(n.Status.Conditions) != 2 || len(n.Status.VolumesInUse) != 1 || len(to.Nodes[1].Spec.Taints) != 1:
		t.Errorf("node lost what adc reads: %+v", n)
	}
	// Idempotent, as client-go requires of a transform.
	again := tp[0].DeepCopy()
	if _, err := cached.TrimInformerObjects(again); err != nil || !reflect.DeepEqual(again, &tp[0]) {
		t.Errorf("trimming twice changed the pod: %v", err)
	}
	// A tombstone's object is trimmed too.
	tomb, err := cached.TrimInformerObjects(cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: pods[0].DeepCopy()})
	if err != nil || len(tomb.(cache.DeletedFinalStateUnknown).Obj.(*v1.Pod).Spec.Containers) != 0 {
		t.Errorf("tombstone not trimmed: %v", err)
	}
}

// TestTrimmedObjectsDecideIdentically runs adc's decision engine (the rows of `adc plan`,
// which the controller's reconcile shares) over the fixture whole and trimmed.
func TestTrimmedObjectsDecideIdentically(t *testing.T) {
	pods, objs, vas := trimFixture()
	tp, to, _ := trimmed(t, pods, objs, vas)
	for _, cfg := range []migration.Config{
		migration.DefaultConfig(),
		migration.DefaultConfig().WithModes(map[string]migration.Mode{"kubernetes.io/gce-pd": migration.ModeOff}),
		migration.DefaultConfig().WithModes(map[string]migration.Mode{"kubernetes.io/gce-pd": migration.ModeComplete}),
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			whole, trim := plan.FromObjects(cfg, pods, objs), plan.FromObjects(cfg, tp, to)
			if len(whole.Decisions) < 20 {
				t.Fatalf("fixture too small: %d decisions", len(whole.Decisions))
			}
			if !reflect.DeepEqual(whole, trim) {
				for i := range whole.Decisions {
					if i < len(trim.Decisions) && !reflect.DeepEqual(whole.Decisions[i], trim.Decisions[i]) {
						t.Errorf("decision %d differs:\n whole   %+v\n trimmed %+v", i, whole.Decisions[i], trim.Decisions[i])
					}
				}
				t.Fatalf("trimmed objects decide differently (%d vs %d rows)", len(whole.Decisions), len(trim.Decisions))
			}
		})
	}
}

// TestControllerOnTrimmedInformersActsIdentically runs the whole controller twice over the
// same cluster, once on whole informer objects and once with WithTrimmedObjects, and compares
// every pair's state and every VolumeAttachment it created.
func TestControllerOnTrimmedInformersActsIdentically(t *testing.T) {
	pods, objs, vas := trimFixture()
	run := func(trim bool) ([]readmodel.PairState, []string) {
		var objects []runtime.Object
		for i := range pods {
			objects = append(objects, &pods[i])
		}
		for i := range objs.Nodes {
			objects = append(objects, &objs.Nodes[i])
		}
		for i := range objs.PVs {
			objects = append(objects, &objs.PVs[i])
		}
		for i := range objs.PVCs {
			objects = append(objects, &objs.PVCs[i])
		}
		for i := range objs.CSINodes {
			objects = append(objects, &objs.CSINodes[i])
		}
		for i := range objs.CSIDrivers {
			objects = append(objects, &objs.CSIDrivers[i])
		}
		for i := range vas {
			objects = append(objects, &vas[i])
		}
		client := fake.NewClientset(objects...)
		var fopts []informers.SharedInformerOption
		if trim {
			fopts = append(fopts, cached.WithTrimmedObjects())
		}
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, fopts...)
		opts := adc.DefaultOptions()
		opts.Recorder = record.NewFakeRecorder(1000)
		ctrl, err := adc.New(client, nil, factory, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		factory.Start(ctx.Done())
		done := make(chan struct{})
		go func() { defer close(done); ctrl.Run(ctx, 2) }()
		defer func() { cancel(); <-done; factory.Shutdown() }()
		var snap []readmodel.PairState
		stable := 0
		// Settled: every pod with volumes on a managed node has its pairs, the creates are
		// done, and nothing changed for ten polls in a row.
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			prev := snap
			snap = normalize(ctrl.Snapshot())
			seen := map[string]bool{}
			for _, s := range snap {
				seen[s.Pod] = true
			}
			if !seen["ns/p1"] || !seen["ns/p-nocsinode"] || !seen["ns/p-deleted-running"] || vaCount(ctx, client) < 3 || !reflect.DeepEqual(prev, snap) {
				stable = 0
				return false, nil
			}
			stable++
			return stable >= 10, nil
		})
		if err != nil {
			t.Fatalf("controller (trim=%v) did not settle: %v; snapshot %+v", trim, err, snap)
		}
		list, _ := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		var names []string
		for _, va := range list.Items {
			names = append(names, va.Name)
		}
		return snap, names
	}
	wholeSnap, wholeVAs := run(false)
	trimSnap, trimVAs := run(true)
	if !reflect.DeepEqual(wholeSnap, trimSnap) {
		t.Errorf("pair states differ:\n whole   %+v\n trimmed %+v", wholeSnap, trimSnap)
	}
	if !reflect.DeepEqual(wholeVAs, trimVAs) {
		t.Errorf("VolumeAttachments differ:\n whole   %v\n trimmed %v", wholeVAs, trimVAs)
	}
}

func vaCount(ctx context.Context, client *fake.Clientset) int {
	list, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	return len(list.Items)
}

// normalize drops what depends on the clock (times, and how many backoff retries a held
// pair had so far), which differs between two runs.
func normalize(in []readmodel.PairState) []readmodel.PairState {
	out := make([]readmodel.PairState, len(in))
	for i, s := range in {
		s.Since, s.NextRetry, s.Retries = time.Time{}, time.Time{}, 0
		out[i] = s
	}
	return out
}
