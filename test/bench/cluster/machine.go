package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine is a sample of the machine's load: the load averages and the CPU time counters of
// /proc/stat (all processes, ours and others').
type machine struct {
	cores            int
	memGiB           float64
	load1, load5     float64
	busyTicks, total uint64
}

func readMachine() machine {
	m := machine{cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 2 {
			m.load1, _ = strconv.ParseFloat(f[0], 64)
			m.load5, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					m.memGiB = kb / (1 << 20)
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu  user nice system idle iowait irq softirq steal ...
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		for i, v := range f[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			m.total += n
			if i != 3 && i != 4 { // idle, iowait
				m.busyTicks += n
			}
		}
	}
	return m
}

func (m machine) describeMachine() string {
	return fmt.Sprintf("%d cores, %.0f GiB", m.cores, m.memGiB)
}

func (m machine) describeLoad() string {
	return fmt.Sprintf("load average %.2f (1 min), %.2f (5 min)", m.load1, m.load5)
}

// busy is the share of CPU time spent busy between two samples.
func busy(a, b machine) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busyTicks-a.busyTicks) / float64(b.total-a.total)
}
