package explain

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/plan"
)

// ErrNotFound is wrapped by Read when the target does not exist.
var ErrNotFound = fmt.Errorf("not found")

// Read reads what explaining target needs through plan's reader: the pods and claims of the
// target's namespace (scheduled or not: a pending pod is what people ask about), the
// volumes they name, and every node, CSINode, CSIDriver and VolumeAttachment (a ReadWriteOnce
// volume may be held by any node). From the API server (plan.Clients) that is list calls the
// controller's own role allows; a running controller reads its caches. A target that does not
// exist is an error wrapping ErrNotFound.
func Read(ctx context.Context, from plan.Reader, cfg migration.Config, t Target) (plan.Cluster, error) {
	scope := plan.Scope{Namespace: t.Namespace, Unscheduled: true, VolumeAttachments: true}
	if t.Kind == KindPV {
		pvs, err := from.PersistentVolumes(ctx, []string{t.Name})
		if err != nil {
			return plan.Cluster{}, fmt.Errorf("explaining %s: %w", t, err)
		}
		if len(pvs) == 0 {
			return plan.Cluster{}, fmt.Errorf("explaining %s: PersistentVolume %q %w; list them with kubectl get pv", t, t.Name, ErrNotFound)
		}
		scope.PVs = []string{t.Name}
		if ref := pvs[0].Spec.ClaimRef; ref != nil {
			scope.Namespace = ref.Namespace
		} else {
			scope.NoPods = true
		}
	}
	cl, err := plan.ReadCluster(ctx, from, cfg, scope)
	if err != nil {
		return cl, fmt.Errorf("explaining %s: %w", t, err)
	}
	if t.Kind == KindPod && findPod(cl.Pods, t.Namespace, t.Name) == nil {
		return cl, fmt.Errorf("explaining %s: pod %s/%s %w; list them with kubectl get pods -n %s", t, t.Namespace, t.Name, ErrNotFound, t.Namespace)
	}
	return cl, nil
}

func findPod(pods []v1.Pod, ns, name string) *v1.Pod {
	for i := range pods {
		if pods[i].Namespace == ns && pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}
