package simulator

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Kubelet is a SIMULATED kubelet: it registers Nodes, writes CSINodes with the
// migrated-plugins annotation and reports status.volumesInUse, the parts of a kubelet the
// attach/detach controller reads. It mounts nothing.
type Kubelet struct {
	Client kubernetes.Interface
}

// RegisterNode creates a Ready node; managed sets the controller-managed-attach-detach
// annotation as a kubelet with --enable-controller-attach-detach does.
func (k Kubelet) RegisterNode(ctx context.Context, name string, managed bool) (*v1.Node, error) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if managed {
		node.Annotations = map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	}
	created, err := k.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet: registering node %s: %w", name, err)
	}
	if err := k.SetReady(ctx, name, true, time.Now()); err != nil {
		return nil, err
	}
	return created, nil
}

// SetReady sets the node's Ready condition, with since as its last transition time.
func (k Kubelet) SetReady(ctx context.Context, name string, ready bool, since time.Time) error {
	status := v1.ConditionTrue
	if !ready {
		status = v1.ConditionFalse
	}
	return k.SetReadyCondition(ctx, name, status, since)
}

// SetReadyCondition sets the node's Ready condition to status (True, False or Unknown) with
// since as its last transition time, as a node lifecycle controller does for a node that
// stopped heartbeating (Unknown) or a kubelet reporting a problem (False).
func (k Kubelet) SetReadyCondition(ctx context.Context, name string, status v1.ConditionStatus, since time.Time) error {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q,"reason":"SimulatedKubelet","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		status, since.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
	_, err := k.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("simulated kubelet: setting Ready=%s on node %s: %w", status, name, err)
	}
	return nil
}

// Heartbeat renews the node's Ready=True condition's heartbeat time, keeping its last
// transition time (conditions merge by type).
func (k Kubelet) Heartbeat(ctx context.Context, name string) error {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"SimulatedKubelet","lastHeartbeatTime":%q}]}}`,
		time.Now().UTC().Format(time.RFC3339))
	_, err := k.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("simulated kubelet: heartbeat of node %s: %w", name, err)
	}
	return nil
}

// ReportCSINode creates or updates the node's CSINode with the migrated-plugins annotation
// (comma-separated, as the kubelet writes it) and one entry per driver.
func (k Kubelet) ReportCSINode(ctx context.Context, nodeName, migratedPlugins string, drivers ...string) error {
	node, err := k.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("simulated kubelet: reading node %s: %w", nodeName, err)
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{
		Name:            nodeName,
		Annotations:     map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": migratedPlugins},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
	}}
	for _, d := range drivers {
		csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: nodeName})
	}
	api := k.Client.StorageV1().CSINodes()
	existing, err := api.Get(ctx, nodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, csiNode, metav1.CreateOptions{})
	case err == nil:
		existing.Annotations = csiNode.Annotations
		existing.Spec = csiNode.Spec
		_, err = api.Update(ctx, existing, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("simulated kubelet: writing CSINode %s: %w", nodeName, err)
	}
	return nil
}

// SetVolumesInUse replaces the node's status.volumesInUse.
func (k Kubelet) SetVolumesInUse(ctx context.Context, nodeName string, names ...string) error {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	patch := `{"status":{"volumesInUse":[` + strings.Join(quoted, ",") + `]}}`
	if len(names) == 0 {
		patch = `{"status":{"volumesInUse":null}}`
	}
	_, err := k.Client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("simulated kubelet: setting volumesInUse on node %s: %w", nodeName, err)
	}
	return nil
}
