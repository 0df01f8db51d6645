package adc

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/migration-aware/adc/pkg/adc/internal/cached"
)

// byNodeIndex is the index adc adds to the pod informer (the pods scheduled to a node: the
// node's desired state) and to the VolumeAttachment informer (the CSI part of its actual
// state), under one name: one index per informer, keyed by spec.nodeName.
const byNodeIndex = "adc.spec.nodeName"

func addIndexers(pods, vas cache.SharedIndexInformer) error {
	if err := pods.AddIndexers(cache.Indexers{
		byNodeIndex: podNodeName,
	}); err != nil {
		return fmt.Errorf("adding pod indexers: %w", err)
	}
	if err := vas.AddIndexers(cache.Indexers{
		byNodeIndex: vaNodeName,
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
