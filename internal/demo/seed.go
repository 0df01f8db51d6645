package demo

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/test/simulator"
)

// seed creates the nodes (all but the late CSINode), CSIDrivers, volumes, claims and pods.
func seed(ctx context.Context, c kubernetes.Interface) error {
	kubelet := simulator.Kubelet{Client: c}
	for _, n := range nodes {
		if _, err := kubelet.RegisterNode(ctx, n.name, true); err != nil {
			return err
		}
		if n.migrated != "-" {
			if err := kubelet.ReportCSINode(ctx, n.name, n.migrated, n.drivers...); err != nil {
				return err
			}
		}
	}
	for _, d := range noAttachDrivers {
		if _, err := c.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d},
			Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CSIDriver %s: %w", d, err)
		}
	}
	return SeedWorkloads(ctx, c)
}

// SeedWorkloads creates the story's namespace, volumes, claims (bound, as the PV controller
// the local control plane lacks would bind them) and pods (on their nodes, as the scheduler it
// lacks would place them), but no node, CSINode or CSIDriver: the demo on real parts has real
// kubelets and driver installations write those.
func SeedWorkloads(ctx context.Context, c kubernetes.Interface) error {
	return seedWorkloads(ctx, c, false)
}

// SeedClusterWorkloads seeds the story as a user would on a cluster that runs the scheduler and
// the PV controller (make demo REAL=1): each claim names its pre-created volume
// (spec.volumeName), and the PV controller binds them; each pod asks for its node by the
// node's kubernetes.io/hostname label, and the scheduler places it. It waits until the
// namespace's default ServiceAccount exists (the ServiceAccount admission plugin refuses pods
// until kube-controller-manager creates it).
func SeedClusterWorkloads(ctx context.Context, c kubernetes.Interface) error {
	return seedWorkloads(ctx, c, true)
}

func seedWorkloads(ctx context.Context, c kubernetes.Interface, cluster bool) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	if cluster {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().ServiceAccounts(Namespace).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("namespace %s: kube-controller-manager did not create its default ServiceAccount: %w", Namespace, err)
		}
	}
	// The configMap volume's data, so a real kubelet can mount it.
	settings := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: Namespace}, Data: map[string]string{"mode": "rollout"}}
	if _, err := c.CoreV1().ConfigMaps(Namespace).Create(ctx, settings, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating configMap %s/settings: %w", Namespace, err)
	}
	claims := map[string]bool{}
	for _, w := range workloads {
		vol := v1.Volume{Name: "data"}
		switch w.kind {
		case inlineGCE:
			vol.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: w.claim}
		case configMap:
			vol.ConfigMap = &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}
		default:
			if !claims[w.claim] {
				claims[w.claim] = true
				if err := boundClaim(ctx, c, w, cluster); err != nil {
					return err
				}
			}
			vol.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: w.claim}
		}
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: w.pod, Namespace: Namespace},
			Spec: v1.PodSpec{
				// Nothing a kubelet would need a service account token or services for.
				AutomountServiceAccountToken: ptr.To(false),
				EnableServiceLinks:           ptr.To(false),
				Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: v1.PullIfNotPresent,
					VolumeMounts: []v1.VolumeMount{{Name: vol.Name, MountPath: "/data"}}}},
				Volumes: []v1.Volume{vol},
			},
		}
		if cluster {
			pod.Spec.NodeSelector = map[string]string{v1.LabelHostname: w.node}
		} else {
			pod.Spec.NodeName = w.node
		}
		if _, err := c.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", w.pod, err)
		}
	}
	return nil
}

// boundClaim creates a PV for the workload and a claim bound to it: with the simulated binder
// standing in for the PV controller (which the local control plane does not run), or, on a
// cluster, a claim that names the volume, for the PV controller to bind.
func boundClaim(ctx context.Context, c kubernetes.Interface, w workload, cluster bool) error {
	pvName := "pv-" + w.claim
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes: w.modes,
		},
	}
	switch w.kind {
	case gcePD:
		pv.Labels = map[string]string{v1.LabelTopologyZone: zoneOf(w.kind)}
		pv.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: "disk-" + w.claim}
	case awsEBS:
		pv.Labels = map[string]string{v1.LabelTopologyZone: zoneOf(w.kind)}
		pv.Spec.AWSElasticBlockStore = &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://" + zoneOf(w.kind) + "/vol-" + w.claim}
	case portworx:
		pv.Spec.PortworxVolume = &v1.PortworxVolumeSource{VolumeID: "px-" + w.claim}
	case nativeCSI:
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: w.driver, VolumeHandle: "vol-" + w.claim}
	}
	if !cluster {
		_, err := simulator.BindNewClaim(ctx, c, Namespace, w.claim, pv)
		return err
	}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PersistentVolume %s: %w", pv.Name, err)
	}
	claim := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: w.claim, Namespace: Namespace},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      w.modes,
			Resources:        v1.VolumeResourceRequirements{Requests: pv.Spec.Capacity},
			VolumeName:       pvName,
			StorageClassName: ptr.To(""),
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating claim %s/%s: %w", Namespace, w.claim, err)
	}
	return nil
}

// zoneOf is the zone of the story's zonal volumes of a kind, empty for the others.
func zoneOf(k volumeKind) string {
	switch k {
	case gcePD:
		return "europe-west1-b"
	case awsEBS:
		return "eu-west-1a"
	}
	return ""
}
