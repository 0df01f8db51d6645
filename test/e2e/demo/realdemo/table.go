package realdemo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"

	"github.com/migration-aware/adc/internal/demo"
	"github.com/migration-aware/adc/pkg/rollout"
	"github.com/migration-aware/adc/test/e2e/harness"
)

// printTable prints, per pod, what the real parts did: the path adc chose, the
// VolumeAttachment csi-attacher acted on, whether adc listed the volume in node status, and
// the phase the kubelet reports.
func printTable(out io.Writer, st *story, obs observation, running map[string]time.Duration) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOD\tVOLUME\tPATH (adc)\tVOLUMEATTACHMENT\tIN NODE STATUS\tPOD (kubelet)\tRUNNING AT")
	for _, sp := range st.pods {
		row := obs.rows[sp.Name]
		at := "-"
		if d, ok := running[sp.Name]; ok {
			at = fmt.Sprintf("%+.1fs", d.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sp.Node, sp.Name, sp.Volume, row.path, row.va, row.listed, podPhase(obs.pods[sp.Name]), at)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "(RUNNING AT: since adc started; VolumeAttachment names are csi-<sha256(handle, driver, node)>, as the kubelet looks them up)\n")
}

// row is what the table shows of one pod's volume.
type row struct{ path, va, listed string }

// readRows reads, for every pod, its volume's VolumeAttachment and node status entry, named
// from the CSI handle csi-translation-lib gives it (the name the kubelet and csi-attacher use).
func readRows(ctx context.Context, s *harness.Stack, st *story, obs *observation) error {
	c := s.Client
	vas, err := c.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	byName := map[string]*storagev1.VolumeAttachment{}
	for i := range vas.Items {
		byName[vas.Items[i].Name] = &vas.Items[i]
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	listed := map[string]map[string]bool{}
	for _, n := range nodes.Items {
		listed[n.Name] = map[string]bool{}
		for _, av := range n.Status.VolumesAttached {
			listed[n.Name][string(av.Name)] = true
		}
	}
	obs.rows = map[string]row{}
	for _, sp := range st.pods {
		r := row{path: "-", va: "-", listed: "-"}
		key := demo.Namespace + "/" + sp.Name
		driver, handle, err := csiVolume(ctx, s, obs.pods[sp.Name])
		if err != nil {
			return err
		}
		switch {
		case driver == "":
			r.path = "not attachable"
		case contains(st.noAttach, driver):
			r.path = "CSI, no attach"
		case obs.held[key].Pod != "":
			r.path = "held (" + string(obs.held[key].Mechanism) + ")"
		case obs.multiAttach[key]:
			r.path = "held (multi-attach)"
		default:
			r.path = "CSI " + driver
		}
		if driver != "" && !contains(st.noAttach, driver) {
			name := harness.VAName(handle, driver, sp.Node)
			if va, ok := byName[name]; ok {
				r.va = shortVA(name) + " " + vaState(va)
				r.listed = "no"
				if listed[sp.Node][harness.UniqueName(driver, handle)] {
					r.listed = "listed"
				}
			}
		}
		obs.rows[sp.Name] = r
	}
	return nil
}

// csiVolume returns the CSI driver and handle a pod's volume goes through when it goes through
// CSI: the PV's, or the translation of an in-tree PV or inline volume. Empty for a volume that
// is not attachable (configMap).
func csiVolume(ctx context.Context, s *harness.Stack, pod *v1.Pod) (driver, handle string, err error) {
	pv, err := csiPV(ctx, s, pod)
	if err != nil || pv == nil {
		return "", "", err
	}
	return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle, nil
}

// csiPV returns the CSI PersistentVolume of a pod's first volume as the kubelet and
// csi-attacher see it (csi-translation-lib's translation of an in-tree PV or inline volume),
// nil for a volume that is not attachable.
func csiPV(ctx context.Context, s *harness.Stack, pod *v1.Pod) (*v1.PersistentVolume, error) {
	if pod == nil || len(pod.Spec.Volumes) == 0 {
		return nil, nil
	}
	vol := pod.Spec.Volumes[0]
	trans := csitrans.New()
	logger := klog.FromContext(ctx)
	var pv *v1.PersistentVolume
	switch {
	case vol.PersistentVolumeClaim != nil:
		claim, err := s.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, vol.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading claim %s/%s: %w", pod.Namespace, vol.PersistentVolumeClaim.ClaimName, err)
		}
		if pv, err = s.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading PV %s: %w", claim.Spec.VolumeName, err)
		}
		if pv.Spec.CSI == nil {
			if pv, err = trans.TranslateInTreePVToCSI(logger, pv); err != nil {
				return nil, fmt.Errorf("translating PV %s: %w", claim.Spec.VolumeName, err)
			}
		}
	case trans.IsInlineMigratable(&vol):
		var err error
		if pv, err = trans.TranslateInTreeInlineVolumeToCSI(logger, &vol, pod.Namespace); err != nil {
			return nil, fmt.Errorf("translating the inline volume of pod %s: %w", pod.Name, err)
		}
	default:
		return nil, nil
	}
	if pv.Spec.CSI == nil {
		return nil, nil
	}
	return pv, nil
}

// vaState says whether the VolumeAttachment is attached and whether csi-attacher holds it
// (its finalizer).
func vaState(va *storagev1.VolumeAttachment) string {
	state := "not attached"
	if va.Status.Attached {
		state = "attached"
	}
	for _, f := range va.Finalizers {
		if strings.HasPrefix(f, "external-attacher/") {
			return state + " by csi-attacher"
		}
	}
	return state
}

func shortVA(name string) string {
	if len(name) > 14 {
		return name[:14] + "…"
	}
	return name
}

// podPhase is the pod's phase, with the container's waiting reason while it is not running.
func podPhase(p *v1.Pod) string {
	if p == nil {
		return "missing"
	}
	phase := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			return phase + " (" + cs.State.Waiting.Reason + ")"
		}
	}
	return phase
}

// printADCReport prints adc's own view: its report as `adc status` prints it.
func printADCReport(out io.Writer, obs observation) error {
	fmt.Fprintf(out, "\nadc's own report (GET /dashboard/api/v1/rollout of the adc binary):\n")
	return rollout.RenderText(out, obs.report)
}

// printCalls prints, per driver, the CSI calls the mock served: proof that csi-attacher and
// the kubelets drove the volumes, with the volume ids they sent.
func printCalls(out io.Writer, s *harness.Stack) {
	fmt.Fprintf(out, "\nCSI calls the drivers served (from their call logs):\n")
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  DRIVER\tControllerPublish\tNodeStage\tNodePublish\tVOLUME IDS (as csi-attacher sent them)")
	for _, d := range s.Drivers() {
		calls, err := d.Calls()
		if err != nil {
			fmt.Fprintf(tw, "  %s\t%v\n", d.Name, err)
			continue
		}
		counts := map[string]int{}
		ids := map[string]bool{}
		for _, c := range calls {
			if c.Code != "OK" {
				continue
			}
			counts[c.Method]++
			if c.Method == "ControllerPublishVolume" {
				ids[c.VolumeID] = true
			}
		}
		var list []string
		for id := range ids {
			list = append(list, id)
		}
		sort.Strings(list)
		cp := fmt.Sprint(counts["ControllerPublishVolume"])
		if !d.AttachRequired {
			cp = "- (no attach)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", d.Name, cp, counts["NodeStageVolume"], counts["NodePublishVolume"], strings.Join(list, " "))
	}
	_ = tw.Flush()
}
