package realdemo

import (
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/csi-translation-lib/plugins"

	"github.com/migration-aware/adc/test/e2e/harness"
)

// topologyKeys are the topology keys of the zonal CSI drivers the story's in-tree volumes
// migrate to: csi-translation-lib turns a zonal in-tree PV's zone label into node affinity on
// them, and the kubelet refuses to mount a volume whose node affinity its Node does not match.
var topologyKeys = map[string]string{
	plugins.GCEPDDriverName:  plugins.GCEPDTopologyKey,
	plugins.AWSEBSDriverName: plugins.AWSEBSTopologyKey,
}

// zones returns each node's zone: the zone of the zonal volumes of its pods.
func (st *story) zones() (map[string]string, error) {
	out := map[string]string{}
	for _, p := range st.pods {
		if p.Zone == "" {
			continue
		}
		if z, ok := out[p.Node]; ok && z != p.Zone {
			return nil, fmt.Errorf("the story puts volumes of zones %s and %s on node %s", z, p.Zone, p.Node)
		}
		out[p.Node] = p.Zone
	}
	return out, nil
}

// placeInZones gives each zonal node what a cloud node reports: the kubelet registers it with
// its zone label (as a cloud provider labels it), and the zonal CSI drivers report the zone
// from NodeGetInfo on it, which the kubelet copies to the node's labels and CSINode.
func placeInZones(ho *harness.Options, zones map[string]string) {
	ho.NodeLabels = map[string]map[string]string{}
	for node, zone := range zones {
		ho.NodeLabels[node] = map[string]string{v1.LabelTopologyZone: zone}
	}
	for i, d := range ho.Drivers {
		key, ok := topologyKeys[d.Name]
		if !ok {
			continue
		}
		ho.Drivers[i].Topology = map[string]map[string]string{}
		for node, zone := range zones {
			ho.Drivers[i].Topology[node] = map[string]string{key: zone}
		}
	}
}

// printZones says which node is in which zone, and who says so.
func printZones(out io.Writer, zones map[string]string) {
	var nodes []string
	for n := range zones {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var parts []string
	for _, n := range nodes {
		parts = append(parts, n+"="+zones[n])
	}
	fmt.Fprintf(out, "  zones %s: each kubelet registers its node's zone label (as a cloud\n", strings.Join(parts, ", "))
	fmt.Fprintf(out, "    labels it), the PD and EBS mock drivers report topology.gke.io/zone and topology.ebs.csi.aws.com/zone from\n")
	fmt.Fprintf(out, "    NodeGetInfo (as the real node plugins do), which the scheduler and the kubelet check against the PVs\n")
}
