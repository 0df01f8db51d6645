package preflight

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// Cluster is everything a preflight reads: what `adc status` reads (pods, claims, volumes,
// nodes, CSINodes, CSIDrivers, VolumeAttachments, and the seed-API objects the sources ask
// for) and the StorageClasses.
type Cluster struct {
	plan.Cluster
	// StorageClasses are checked for parameters csi-translation-lib rejects or drops.
	StorageClasses []storagev1.StorageClass
}

// List reads the cluster once, one List call per resource; it only reads.
func List(ctx context.Context, c plan.Clients, cfg migration.Config) (Cluster, error) {
	cl, err := plan.ReadCluster(ctx, c, cfg, plan.Scope{VolumeAttachments: true})
	if err != nil {
		return Cluster{}, fmt.Errorf("preflight: %w", err)
	}
	scs, err := c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Cluster{}, fmt.Errorf("preflight: listing storageclasses.storage.k8s.io: %w; check that the kubeconfig's user may list StorageClasses", err)
	}
	klog.FromContext(ctx).V(2).Info("Listed StorageClasses", "storageClasses", len(scs.Items))
	return Cluster{Cluster: cl, StorageClasses: scs.Items}, nil
}
