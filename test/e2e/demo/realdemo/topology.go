package realdemo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migration-aware/adc/internal/demo"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// topologyLabels returns, per node, the labels the CSI PersistentVolumes of its pods require.
// csi-translation-lib turns a zonal in-tree PV's zone label into node affinity on the CSI
// driver's own topology key (topology.gke.io/zone, topology.ebs.csi.aws.com/zone), and the
// kubelet refuses to mount a volume whose node affinity its Node does not match. A real PD or
// EBS CSI node plugin reports that topology through NodeGetInfo and the kubelet copies it to
// the Node's labels; the mock driver reports none, so the demo stages them.
func topologyLabels(ctx context.Context, s *harness.Stack, st *story) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, sp := range st.pods {
		if realOutcome(sp) == outcomeHeldInTree {
			continue // never attached here, never mounted: nothing to stage for it
		}
		pod, err := s.Client.CoreV1().Pods(demo.Namespace).Get(ctx, sp.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading pod %s/%s: %w", demo.Namespace, sp.Name, err)
		}
		pv, err := csiPV(ctx, s, pod)
		if err != nil {
			return nil, err
		}
		if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
			continue
		}
		// Terms are ORed: matching the first is enough.
		for _, e := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions {
			if e.Operator != v1.NodeSelectorOpIn || len(e.Values) == 0 {
				continue
			}
			if out[sp.Node] == nil {
				out[sp.Node] = map[string]string{}
			}
			out[sp.Node][e.Key] = e.Values[0]
		}
	}
	return out, nil
}

// labelNode adds labels to node; it returns false when the Node does not exist yet.
func labelNode(ctx context.Context, s *harness.Stack, node string, labels map[string]string) (bool, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return false, err
	}
	_, err = s.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("labelling node %s with %v: %w", node, labels, err)
	}
	return true, nil
}

// printTopology says which labels the demo stages on which node.
func printTopology(out io.Writer, labels map[string]map[string]string) {
	var nodes []string
	for n := range labels {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		var kv []string
		for k, v := range labels[n] {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		fmt.Fprintf(out, "STAGED: node %s labelled %s\n", n, strings.Join(kv, ","))
	}
	if len(nodes) > 0 {
		fmt.Fprintf(out, "  (the topology a real PD/EBS CSI node plugin reports through NodeGetInfo; the mock reports none, and the\n")
		fmt.Fprintf(out, "  kubelet refuses a migrated zonal PV whose translated node affinity its Node does not match)\n")
	}
}
