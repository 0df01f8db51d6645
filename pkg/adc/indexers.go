package adc

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
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
	p, ok := cached.PlacementOf(obj)
	if !ok || p.Node == "" {
		return nil, nil
	}
	return []string{p.Node}, nil
}

func vaNodeName(obj interface{}) ([]string, error) {
	if node, ok := cached.VANodeName(obj); ok {
		return []string{node}, nil
	}
	return nil, nil
}
