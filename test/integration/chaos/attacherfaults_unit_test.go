package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// faultTrace runs the fault plan of seed over the same sequence of VolumeAttachments a run
// could see (names coming back as new objects, attaches and detaches retried) with fresh
// random UIDs, and returns every decision in order.
func faultTrace(seed uint64) []string {
	f := newAttacherFaults(seed)
	var out []string
	for incarnation := 0; incarnation < 3; incarnation++ {
		for i := 0; i < 40; i++ {
			va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("csi-%02d", i), UID: types.UID(uuid.NewUUID())}}
			for attempt := 0; attempt < 12; attempt++ {
				out = append(out, fmt.Sprintf("%s/%d attach %d: %t", va.Name, incarnation, attempt, f.attachFails(va)))
			}
			now := metav1.Now()
			va.DeletionTimestamp = &now
			for attempt := 0; attempt < 10; attempt++ {
				out = append(out, fmt.Sprintf("%s/%d detach %d: %t, delay %s", va.Name, incarnation, attempt, f.detachFails(va), f.detachDelay(va)))
			}
		}
	}
	return out
}

// CHAOS_SEED replays the attacher's faults: two runs of the fault plan with one seed make the
// same choices, although every VolumeAttachment gets another UID; another seed makes others.
func TestAttacherFaultsReplay(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seedA      uint64
		seedB      uint64
		wantEqual  bool
		wantFaults bool
	}{
		{name: "same seed", seedA: 42, seedB: 42, wantEqual: true, wantFaults: true},
		{name: "same seed, another", seedA: 1764000000123456789, seedB: 1764000000123456789, wantEqual: true, wantFaults: true},
		{name: "other seed", seedA: 42, seedB: 43, wantEqual: false, wantFaults: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := faultTrace(tc.seedA), faultTrace(tc.seedB)
			if got := slices.Equal(a, b); got != tc.wantEqual {
				i := 0
				for i < len(a) && i < len(b) && a[i] == b[i] {
					i++
				}
				t.Fatalf("traces equal = %t, want %t (first difference at decision %d of %d)", got, tc.wantEqual, i, len(a))
			}
			faulty := 0
			for _, d := range a {
				if strings.Contains(d, ": true") {
					faulty++
				}
			}
			if (faulty > 0) != tc.wantFaults {
				t.Errorf("%d failing decisions, want some", faulty)
			}
		})
	}
}
