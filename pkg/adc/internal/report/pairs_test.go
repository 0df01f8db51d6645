package report

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/readmodel"
)

// TestPairRecordKeepsEveryField: what the snapshot keeps gives back the PairState it was
// given, zero times included.
func TestPairRecordKeepsEveryField(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	for _, s := range []readmodel.PairState{
		{Node: "n1", Pod: "ns/p", Volume: "data", PV: "pv1", Plugin: "kubernetes.io/csi", Driver: "d",
			Mechanism: migration.MechanismCSI, Phase: readmodel.PhaseHeld, Reason: "why", Retries: 3, NextRetry: at,
			VolumeAttachment: "csi-1", UniqueName: "kubernetes.io/csi/d^h", Since: at.Add(-time.Minute)},
		{Node: "n1", Phase: readmodel.PhaseDetaching},
	} {
		r := recordOf(&s)
		got := r.state(s.Node)
		if !got.NextRetry.Equal(s.NextRetry) || !got.Since.Equal(s.Since) {
			t.Errorf("times changed: %v %v, want %v %v", got.NextRetry, got.Since, s.NextRetry, s.Since)
		}
		got.NextRetry, got.Since, s.NextRetry, s.Since = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("record gave back %+v, want %+v", got, s)
		}
	}
	// 144 bytes, and a pointer to the detach verdict that only pairs of nodes that are not
	// Ready have.
	if size := unsafe.Sizeof(pairRecord{}); size > 152 {
		t.Errorf("a pairRecord is %d bytes; it is kept once per pair of the cluster", size)
	}
}

// TestSnapshotSharesReasons: the pairs of one driver keep one copy of their reason.
func TestSnapshotSharesReasons(t *testing.T) {
	p := NewPairs()
	reason := func() string { return string([]byte("native CSI volume; the driver needs attach")) } // a fresh copy each time
	p.Set("n1", []readmodel.PairState{{Pod: "ns/a", Reason: reason()}, {Pod: "ns/b", Reason: reason()}}, time.Now())
	pairs := p.All()
	if unsafe.StringData(pairs[0].Reason) != unsafe.StringData(pairs[1].Reason) {
		t.Error("two pairs with the same reason keep two copies of it")
	}
}
