package plan

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	detachv1alpha1 "github.com/migration-aware/adc/pkg/apis/detachpolicy/v1alpha1"
	"github.com/migration-aware/adc/pkg/migration"
)

// Cluster is one read (ReadCluster) of everything a decision view needs: the pods of its
// scope, the objects decisions are made from and, when asked for, the VolumeAttachments.
type Cluster struct {
	Pods              []v1.Pod
	Objects           migration.Objects
	VolumeAttachments []storagev1.VolumeAttachment
	// DetachPolicies decide the detaches of nodes that are not Ready; none when the CRD is
	// not installed or may not be read.
	DetachPolicies []detachv1alpha1.DetachPolicy
}

// Build reads the scheduled pods of the whole cluster (ReadCluster) and returns the plan
// report. It only reads.
func Build(ctx context.Context, from Reader, cfg migration.Config) (Report, error) {
	cl, err := ReadCluster(ctx, from, cfg, Scope{})
	if err != nil {
		return Report{}, fmt.Errorf("building plan: %w", err)
	}
	r := FromObjects(cfg, cl.Pods, cl.Objects)
	r.NodeLoss = NodeLossFromObjects(cl.Objects, cl.DetachPolicies, DefaultMaxWaitForUnmount, time.Now())
	if len(r.NodeLoss) == 0 {
		r.NodeLoss = nil
	}
	return r, nil
}

// DefaultMaxWaitForUnmount is the controller's default --max-wait-for-unmount (upstream's
// six minutes), the built-in rule's timeout in plan's and status's node-loss rows.
const DefaultMaxWaitForUnmount = 6 * time.Minute
