package attachstate

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/migration-aware/adc/pkg/migration"
)

// fakeStore is an informer store the test fills: VolumeAttachments by name, known nodes.
type fakeStore struct {
	vas   map[string]*storagev1.VolumeAttachment
	nodes map[string]bool
}

func (s *fakeStore) VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool) {
	va, ok := s.vas[name]
	return va, ok
}

func (s *fakeStore) VolumeAttachmentsOnNode(node string) []*storagev1.VolumeAttachment {
	var out []*storagev1.VolumeAttachment
	for _, va := range s.vas {
		if va.Spec.NodeName == node {
			out = append(out, va)
		}
	}
	return out
}

func (s *fakeStore) NodeKnown(node string) bool { return s.nodes[node] }

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func newTestMemory(nodes ...string) (*State, *fakeStore) {
	store := &fakeStore{vas: map[string]*storagev1.VolumeAttachment{}, nodes: map[string]bool{}}
	for _, n := range nodes {
		store.nodes[n] = true
	}
	return New(Options{Store: store, Volumes: testPVs{"pv1": "h1", "pv1-again": "h1", "pv2": "h2"}, Clock: fixedClock{time.Unix(1_000_000, 0)},
		NewBackOff: func() *backoff.ExponentialBackOff { return backoff.NewExponentialBackOff() }}), store
}

// testPVs names PersistentVolumes of driver d: pv name -> handle.
type testPVs map[string]string

func (p testPVs) PVCSIIdentity(name string) (string, string, bool) {
	h, ok := p[name]
	return "d", h, ok
}

// vol1 is the volume of pv1 and pv1-again (one disk, two PersistentVolumes).
var vol1 = migration.CSIUniqueName("d", "h1")

func storedVA(name, node, pv, uid, rv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
	}
}

// Check finds each kind of broken memory it documents. The memory is broken from inside the
// package, as no sequence of operations can.
func TestCheckFindsBrokenMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(m *State)
	}{
		{"expectation missing from its node index", func(m *State) {
			m.expected.add(&expectedVA{va: storedVA("csi-a", "n1", "pv1", "", "")})
			delete(m.expected.byNode["n1"], "csi-a")
		}},
		{"expectation of a volume reserved for another node", func(m *State) {
			m.expected.add(&expectedVA{va: storedVA("csi-a", "n1", "pv1", "", ""), volume: vol1})
			m.reservations[vol1] = "n2"
		}},
		{"in-tree attachment both held and forgotten", func(m *State) {
			m.inTree["n1"] = map[string]InTreeAttachment{"kubernetes.io/gce-pd/a": {}}
			m.inTreeForgotten["n1"] = map[string]bool{"kubernetes.io/gce-pd/a": true}
		}},
		{"verification time of a node without in-tree attachments", func(m *State) {
			m.inTreeVerified["n1"] = time.Now()
		}},
		{"Event memory of a node that is gone", func(m *State) {
			m.events["gone"] = map[EventKey]string{{Pod: "ns/a", Reason: "r"}: "m"}
		}},
		{"backoff of a node that is gone", func(m *State) {
			m.held["gone"] = map[PairKey]*heldPair{{Node: "gone"}: {}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestMemory("n1", "n2")
			if err := m.Check(); err != nil {
				t.Fatalf("fresh memory: %v", err)
			}
			tc.corrupt(m)
			if err := m.Check(); err == nil {
				t.Fatal("Check found nothing")
			}
		})
	}
}
