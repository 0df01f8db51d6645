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
