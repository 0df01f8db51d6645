package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	status := []byte("Name:\tadc\nVmPeak:\t 2000 kB\nVmHWM:\t  310272 kB\nVmRSS:\t  204800 kB\n")
	if got, err := statusKiB(status, "VmHWM"); err != nil || got != 310272*1024 {
		t.Errorf("VmHWM = %d, %v; want %d", got, err, 310272*1024)
	}
	if _, err := statusKiB(status, "VmSwap"); err == nil {
		t.Error("a missing field parsed")
	}
	// The command name may hold spaces and parentheses; utime=250, stime=50 ticks.
	stat := []byte("4242 (kube (cm) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 1 2\n")
	if got, err := cpuTime(stat); err != nil || got != 3*time.Second {
		t.Errorf("cpuTime = %s, %v; want 3s", got, err)
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxRSS <= 0 || s.RSS <= 0 || s.MaxRSS < s.RSS {
		t.Errorf("sample %+v: want 0 < RSS <= MaxRSS", s)
	}
}
