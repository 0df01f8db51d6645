package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/migration-aware/adc/test/e2e/demo/realdemo"
)

// `make demo REAL=1` tells its story to the end on a stack of its own: every pod that can run
// is Running, the in-tree volume on the staged not-migrated node and the second pod of the
// ReadWriteOnce volume are held by adc, the staged CSINode annotation survived, and nothing
// is left behind (Run fails otherwise). It keeps the real demo from drifting away from the
// story in internal/demo; with a short late kubelet it takes about 10 s.
func TestRealDemo(t *testing.T) {
	var out bytes.Buffer
	err := realdemo.Run(t.Context(), realdemo.Options{Out: &out, ADCBinary: adcBinary, LateKubelet: time.Second, Timeout: 90 * time.Second})
	if err != nil {
		t.Fatalf("real demo: %v\n%s", err, out.String())
	}
	folded := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"REAL:", "STAGED", "csi-attacher v4.13.0",
		"[##########################] 13/13 pods settled: 11 Running, 2 held by adc",
		"held (in-tree)", "held (multi-attach)",
		"nothing left behind",
	} {
		if !strings.Contains(folded, want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}
