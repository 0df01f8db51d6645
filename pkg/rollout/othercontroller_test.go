package rollout

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// `adc status` reads from the cluster whether the leader is fenced: the newest of adc's
// Events about another attach/detach controller decides.
func TestOtherControllerFromEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ev := func(reason, node string, at time.Time) v1.Event {
		return v1.Event{Reason: reason, InvolvedObject: v1.ObjectReference{Kind: "Node", Name: node}, LastTimestamp: metav1.Time{Time: at},
			Message: "field manager kube-controller-manager changed status.volumesAttached"}
	}
	for _, tc := range []struct {
		name   string
		events []v1.Event
		want   string // "" none, else fenced or gone
	}{
		{"no Events", nil, ""},
		{"other Events only", []v1.Event{ev("FailedAttachVolume", "n1", t0)}, ""},
		{"fenced", []v1.Event{ev(EventReasonOtherController, "n1", t0)}, "fenced"},
		{"fenced, then gone", []v1.Event{ev(EventReasonOtherController, "n1", t0), ev(EventReasonOtherControllerGone, "n1", t0.Add(2*time.Minute))}, "gone"},
		{"gone, then fenced again", []v1.Event{ev(EventReasonOtherControllerGone, "n1", t0), ev(EventReasonOtherController, "n2", t0.Add(time.Minute))}, "fenced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := otherControllerFromEvents(tc.events)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("got %+v, want none", got)
			case tc.want == "":
			case got == nil:
				t.Fatalf("got none, want %s", tc.want)
			case got.Fenced != (tc.want == "fenced"):
				t.Errorf("fenced %v, want %s", got.Fenced, tc.want)
			case !strings.Contains(got.Message, "kube-controller-manager"):
				t.Errorf("message %q does not quote the Event", got.Message)
			}
		})
	}
}
