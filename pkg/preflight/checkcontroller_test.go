package preflight

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writtenBy marks the last node's status.volumesAttached and the last VolumeAttachment as
// written by manager at t (zero t: leave that object alone).
func (c *cluster) writtenBy(manager string, nodeAt, vaAt time.Time) *cluster {
	if !nodeAt.IsZero() {
		n := &c.Objects.Nodes[len(c.Objects.Nodes)-1]
		n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			Time: &metav1.Time{Time: nodeAt}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:volumesAttached":{}}}`)}}
	}
	if !vaAt.IsZero() {
		va := &c.VolumeAttachments[len(c.VolumeAttachments)-1]
		va.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			Time: &metav1.Time{Time: vaAt}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:attacher":{}}}`)}}
	}
	return c
}

// Issue 42: before the switch, preflight says kube-controller-manager's attach/detach
// controller is the one writing, and how to switch it off.
func TestOtherControllerFinding(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		cl   *cluster
		want string
	}{
		{"nobody recorded as writer: nothing to say", healthy(), ""},
		{"kube-controller-manager attached and lists the volume", healthy().writtenBy("kube-controller-manager", t0, t0.Add(time.Second)),
			"warns other-attach-detach-controller VolumeAttachment/"},
		{"kube-controller-manager owns node status only", healthy().writtenBy("kube-controller-manager", t0, time.Time{}),
			"warns other-attach-detach-controller Node/n1 @n1"},
		{"adc wrote after kube-controller-manager: adc is in charge",
			healthy().writtenBy("kube-controller-manager", t0, time.Time{}).writtenBy("adc", time.Time{}, t0.Add(time.Minute)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(Options{Config: config(), Plugins: []string{gcePlugin}}, tc.cl.Cluster, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, f := range r.Findings {
				if f.Check == CheckOtherController {
					got = append(got, f)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d other-attach-detach-controller findings, want 1", len(got))
			}
			line := string(got[0].Severity) + " " + string(got[0].Check) + " " + got[0].Object.Kind + "/" + got[0].Object.Name
			if got[0].Node != "" {
				line += " @" + got[0].Node
			}
			if !strings.HasPrefix(line, tc.want) {
				t.Errorf("finding %q, want %q", line, tc.want)
			}
			for _, want := range []string{"kube-controller-manager", "-persistentvolume-attach-detach-controller"} {
				if !strings.Contains(got[0].Why+got[0].Fix, want) {
					t.Errorf("finding does not say %q: %s / %s", want, got[0].Why, got[0].Fix)
				}
			}
		})
	}
}
