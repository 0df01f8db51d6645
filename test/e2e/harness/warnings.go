package harness

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// unregisteredDriverMarks are what the external-attacher's attach error says when the node
// has not registered the driver: its CSINode does not list it, or there is no CSINode.
var unregisteredDriverMarks = []string{"does not contain driver", `csinodes.storage.k8s.io "`}

// UnregisteredDriverWarnings returns, one line per Event, the FailedAttachVolume warnings
// of the stack whose message is an attach the external-attacher failed because the node had
// not registered the volume's CSI driver: adc created a VolumeAttachment too early. Events
// are aggregated by the recorder, so each line carries its count.
func (s *Stack) UnregisteredDriverWarnings(ctx context.Context) ([]string, int, error) {
	events, err := s.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", "FailedAttachVolume").String()})
	if err != nil {
		return nil, 0, fmt.Errorf("harness: listing FailedAttachVolume Events: %w", err)
	}
	var lines []string
	total := 0
	for _, e := range events.Items {
		for _, mark := range unregisteredDriverMarks {
			if strings.Contains(e.Message, mark) {
				n := int(e.Count)
				if n == 0 {
					n = 1
				}
				total += n
				lines = append(lines, fmt.Sprintf("%s %s/%s x%d: %s", e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, n, e.Message))
				break
			}
		}
	}
	return lines, total, nil
}
