package adc

import (
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	// podByNodeIndex finds the pods scheduled to a node, the desired state of that node.
	podByNodeIndex = "adc.spec.nodeName"
	// vaByNodeIndex finds the VolumeAttachments on a node, the CSI part of its actual state.
	vaByNodeIndex = "adc.spec.nodeName"
)

func addIndexers(pods, vas cache.SharedIndexInformer) error {
	if err := pods.AddIndexers(cache.Indexers{
		podByNodeIndex: podNodeName,
	}); err != nil {
		return fmt.Errorf("adding pod indexers: %w", err)
	}
	if err := vas.AddIndexers(cache.Indexers{
		vaByNodeIndex: vaNodeName,
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

func vaNodeName(obj interface{}) ([]string, error) {
	switch va := obj.(type) {
	case *storagev1.VolumeAttachment:
		return []string{va.Spec.NodeName}, nil
	case *cachedVA:
		return []string{va.nodeName}, nil
	}
	return nil, nil
}

// vaSourceKey names the volume a VolumeAttachment attaches, independent of the node:
// pv:<name> for PersistentVolumes, inline:<driver>^<handle> for migrated inline volumes.
func vaSourceKey(va *storagev1.VolumeAttachment) string {
	switch src := va.Spec.Source; {
	case src.PersistentVolumeName != nil:
		return pvKeyPrefix + *src.PersistentVolumeName
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return inlineKeyPrefix + va.Spec.Attacher + "^" + src.InlineVolumeSpec.CSI.VolumeHandle
	}
	return ""
}

// The prefixes of volume source keys.
const (
	pvKeyPrefix     = "pv:"
	inlineKeyPrefix = "inline:"
)
