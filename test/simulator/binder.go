package simulator

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BindNewClaim is a SIMULATED PersistentVolume controller binding, which the test control
// plane does not run: it creates a claim named claimName in namespace and the given pv, bound
// to each other as the PV controller binds them (the claim names the PV, the PV's claimRef
// carries the claim's UID, the claim is Bound). A pv without capacity gets 1Gi and one
// without access modes ReadWriteOnce; the claim asks for the same.
func BindNewClaim(ctx context.Context, c kubernetes.Interface, namespace, claimName string, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	pv = pv.DeepCopy()
	if pv.Spec.Capacity == nil {
		pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	}
	if len(pv.Spec.AccessModes) == 0 {
		pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	claim, err := c.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: namespace},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: pv.Spec.AccessModes,
			Resources:   v1.VolumeResourceRequirements{Requests: pv.Spec.Capacity},
			VolumeName:  pv.Name,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("simulated binder: creating claim %s/%s: %w", namespace, claimName, err)
	}
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claim.Name, UID: claim.UID}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("simulated binder: creating PersistentVolume %s: %w", pv.Name, err)
	}
	claim.Status.Phase = v1.ClaimBound
	bound, err := c.CoreV1().PersistentVolumeClaims(namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("simulated binder: binding claim %s/%s: %w", namespace, claimName, err)
	}
	return bound, nil
}
