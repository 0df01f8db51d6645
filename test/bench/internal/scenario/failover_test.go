package scenario

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The failover benchmark times a controller's start by klog lines of its log: the last line
// containing a text, at the time its header says.
func TestLastLogLine(t *testing.T) {
	log := `I1125 23:57:39.100000   12 controller.go:233] "Starting attach/detach controller"
I1125 23:57:41.250000   12 shared_informer.go:409] "Caches are synced"
W1125 23:57:41.300000   12 reflector.go:664] "Warning: watch ended with error"
I1125 23:57:41.750000   12 shared_informer.go:409] "Caches are synced"
not a klog line mentioning Caches are synced
`
	path := filepath.Join(t.TempDir(), "c.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	year := time.Now().Year()
	for _, tc := range []struct {
		text   string
		want   time.Time
		wantOK bool
	}{
		{text: "Caches are synced", want: time.Date(year, 11, 25, 23, 57, 41, 750000000, time.Local), wantOK: true},
		{text: "Starting attach/detach controller", want: time.Date(year, 11, 25, 23, 57, 39, 100000000, time.Local), wantOK: true},
		{text: "Became the leader", wantOK: false},
	} {
		got, ok := lastLogLine(path, tc.text)
		if ok != tc.wantOK || !got.Equal(tc.want) {
			t.Errorf("lastLogLine(%q) = %s, %v; want %s, %v", tc.text, got, ok, tc.want, tc.wantOK)
		}
	}
}
