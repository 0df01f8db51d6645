package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// GroupLabel is the node label (set by each kubelet's --node-labels) that keeps a scenario's
// pods on the scenario's own nodes, so scenarios that stop, drain or taint a node share a
// cluster without touching each other's pods.
const GroupLabel = "e2e.adc.example.com/group"

// NoProvisioner is the provisioner of a StorageClass whose volumes are created by hand
// (static provisioning): the PV controller only binds them.
const NoProvisioner = "kubernetes.io/no-provisioner"

// CreateNamespace creates namespace name and waits until kube-controller-manager's service
// account controller has created its default ServiceAccount (the ServiceAccount admission
// plugin refuses pods until then).
func CreateNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s: kube-controller-manager did not create its default ServiceAccount: %w", name, err)
	}
	return nil
}

// CreateStorageClass creates a StorageClass of static volumes that the PV controller binds as
// soon as a claim appears (volumeBindingMode Immediate).
func CreateStorageClass(ctx context.Context, client kubernetes.Interface, name string) error {
	immediate := storagev1.VolumeBindingImmediate
	retain := v1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       NoProvisioner,
		VolumeBindingMode: &immediate,
		ReclaimPolicy:     &retain,
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StorageClass %s: %w", name, err)
	}
	return nil
}

// PV describes one pre-created PersistentVolume of a StorageClass.
type PV struct {
	// Name is the PV's name.
	Name string
	// Class is its StorageClass.
	Class string
	// Driver and Handle make a CSI volume.
	Driver, Handle string
	// GCEPD, instead, makes an in-tree gce-pd volume of that disk (migrated to CSI), in Zone.
	GCEPD string
	// Zone labels an in-tree volume topology.kubernetes.io/zone, as the cloud labels a zonal disk.
	Zone string
}

// CreatePV creates pv, unbound: the PV controller binds it to a claim of its class.
func CreatePV(ctx context.Context, client kubernetes.Interface, pv PV) (*v1.PersistentVolume, error) {
	obj := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv.Name},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              pv.Class,
		},
	}
	switch {
	case pv.GCEPD != "":
		obj.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: pv.GCEPD, FSType: "ext4"}
		if pv.Zone != "" {
			obj.Labels = map[string]string{v1.LabelTopologyZone: pv.Zone}
		}
	case pv.Driver != "" && pv.Handle != "":
		obj.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: pv.Driver, VolumeHandle: pv.Handle, FSType: "ext4"}
	default:
		return nil, fmt.Errorf("PV %s needs Driver and Handle, or GCEPD", pv.Name)
	}
	created, err := client.CoreV1().PersistentVolumes().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating PV %s: %w", pv.Name, err)
	}
	return created, nil
}

// StatefulSet describes a StatefulSet with one claim per replica.
type StatefulSet struct {
	// Name of the StatefulSet (and of its headless Service).
	Name string
	// Replicas is the number of pods.
	Replicas int32
	// Class is the StorageClass of the claim template "data".
	Class string
	// Group, when set, keeps the pods on nodes with that GroupLabel value.
	Group string
	// TerminationGracePeriod is the pods' grace period (default 1 s: the hollow kubelet's
	// fake runtime stops containers at once, and a drain should not wait 30 s for nothing).
	TerminationGracePeriod int64
}

// ClaimTemplate is the name of the StatefulSet's volumeClaimTemplate; claims are named
// data-<statefulset>-<ordinal>.
const ClaimTemplate = "data"

// CreateStatefulSet creates the headless Service and the StatefulSet (pods created in
// parallel, not one after another, so a test waits for the slowest, not for the sum).
func CreateStatefulSet(ctx context.Context, client kubernetes.Interface, ns string, s StatefulSet) (*appsv1.StatefulSet, error) {
	labels := map[string]string{"app": s.Name}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec:       v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: labels, Ports: []v1.ServicePort{{Name: "none", Port: 80}}},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Service %s/%s: %w", ns, s.Name, err)
	}
	grace := s.TerminationGracePeriod
	if grace == 0 {
		grace = 1
	}
	class := s.Class
	pod := v1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []v1.Container{{
			Name: "app", Image: harness.PauseImage, ImagePullPolicy: v1.PullIfNotPresent,
			VolumeMounts: []v1.VolumeMount{{Name: ClaimTemplate, MountPath: "/data"}},
		}},
	}
	if s.Group != "" {
		pod.NodeSelector = map[string]string{GroupLabel: s.Group}
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &s.Replicas,
			ServiceName:         s.Name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template:            v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplate},
				Spec: v1.PersistentVolumeClaimSpec{
					AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	created, err := client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating StatefulSet %s/%s: %w", ns, s.Name, err)
	}
	return created, nil
}

// PodName is the name of a StatefulSet's pod.
func PodName(sts string, ordinal int) string { return fmt.Sprintf("%s-%d", sts, ordinal) }

// ClaimName is the name of a StatefulSet pod's claim.
func ClaimName(sts string, ordinal int) string {
	return ClaimTemplate + "-" + PodName(sts, ordinal)
}

// WaitNodesSchedulable waits until every node is Ready and carries no taint a pod would have
// to tolerate (the kubelet registers with node.kubernetes.io/not-ready:NoSchedule, which the
// node lifecycle controller removes).
func WaitNodesSchedulable(ctx context.Context, client kubernetes.Interface, nodes []string, timeout time.Duration) error {
	var last string
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = "listing nodes: " + err.Error()
			return false, nil
		}
		var pending []string
		seen := 0
		for i := range list.Items {
			n := &list.Items[i]
			if !want[n.Name] {
				continue
			}
			seen++
			if !NodeReady(n) {
				pending = append(pending, n.Name+" not Ready")
				continue
			}
			for _, t := range n.Spec.Taints {
				if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
					pending = append(pending, n.Name+" tainted "+t.ToString())
				}
			}
		}
		if seen < len(want) {
			pending = append(pending, fmt.Sprintf("%d of %d nodes registered", seen, len(want)))
		}
		last = strings.Join(pending, "; ")
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not schedulable within %s (%s): %w", timeout, last, err)
	}
	return nil
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
