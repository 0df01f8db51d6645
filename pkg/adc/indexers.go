package adc

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	// podByNodeIndex finds the pods scheduled to a node, the desired state of that node.
	podByNodeIndex = "adc.spec.nodeName"
	// podByClaimIndex finds the pods using a claim, to re-decide them when it binds.
	podByClaimIndex = "adc.claim"
	// vaByNodeIndex finds the VolumeAttachments on a node, the CSI part of its actual state.
	vaByNodeIndex = "adc.spec.nodeName"
	// vaBySourceIndex finds the VolumeAttachments of one volume on any node, for the
	// ReadWriteOnce multi-attach check.
	vaBySourceIndex = "adc.source"
)

func addIndexers(pods, vas cache.SharedIndexInformer) error {
	if err := pods.AddIndexers(cache.Indexers{
		podByNodeIndex:  podNodeName,
		podByClaimIndex: podClaims,
	}); err != nil {
		return fmt.Errorf("adding pod indexers: %w", err)
	}
	if err := vas.AddIndexers(cache.Indexers{
		vaByNodeIndex:   vaNodeName,
		vaBySourceIndex: vaSource,
	}); err != nil {
		return fmt.Errorf("adding VolumeAttachment indexers: %w", err)
	}
	return nil
}

func podNodeName(obj interface{}) ([]string, error) {
	p, ok := placementOf(obj)
	if !ok || p.node == "" {
		return nil, nil
	}
	return []string{p.node}, nil
}

// podClaims reads both pod forms directly: index functions run on every pod write to the
// store, where rebuilding a cached pod would be garbage for two fields.
func podClaims(obj interface{}) ([]string, error) {
	var keys []string
	switch pod := obj.(type) {
	case *v1.Pod:
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			switch {
			case vol.PersistentVolumeClaim != nil:
				keys = append(keys, pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName)
			case vol.Ephemeral != nil:
				keys = append(keys, pod.Namespace+"/"+pod.Name+"-"+vol.Name)
			}
		}
	case *cachedPod:
		for i := range pod.volumes {
			vol := &pod.volumes[i]
			switch {
			case vol.kind == volumeClaim:
				keys = append(keys, pod.Namespace+"/"+vol.claim)
			case vol.source != nil && vol.source.Ephemeral != nil:
				keys = append(keys, pod.Namespace+"/"+pod.Name+"-"+vol.name)
			}
		}
	}
	return keys, nil
}

func vaNodeName(obj interface{}) ([]string, error) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return nil, nil
	}
	return []string{va.Spec.NodeName}, nil
}

func vaSource(obj interface{}) ([]string, error) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return nil, nil
	}
	if key := vaSourceKey(va); key != "" {
		return []string{key}, nil
	}
	return nil, nil
}

// vaSourceKey names the volume a VolumeAttachment attaches, independent of the node:
// pv:<name> for PersistentVolumes, inline:<driver>^<handle> for migrated inline volumes.
func vaSourceKey(va *storagev1.VolumeAttachment) string {
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		return "pv:" + *src.PersistentVolumeName
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return "inline:" + va.Spec.Attacher + "^" + src.InlineVolumeSpec.CSI.VolumeHandle
	}
	return ""
}
