// Package procstat reads a process's peak resident memory and CPU time from /proc, the same
// way for adc and for kube-controller-manager, so the benchmarks compare like with like.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which Linux fixes at
// 100 for user space on every architecture Kubernetes runs on.
const userHZ = 100

// Sample is what the kernel accounts for one process so far.
type Sample struct {
	// MaxRSS is VmHWM: the peak resident set size since the process started, in bytes.
	MaxRSS int64
	// RSS is VmRSS: the resident set size now, in bytes.
	RSS int64
	// CPU is utime+stime: CPU time in user and kernel mode, all threads.
	CPU time.Duration
}

// Read samples process pid. It fails once the process has exited, so callers sample before
// they stop it.
func Read(pid int) (Sample, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Sample{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Sample{}, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	var s Sample
	if s.MaxRSS, err = statusKiB(status, "VmHWM"); err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if s.RSS, err = statusKiB(status, "VmRSS"); err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if s.CPU, err = cpuTime(stat); err != nil {
		return Sample{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return s, nil
}

// statusKiB returns the field of /proc/<pid>/status ("VmHWM:  123456 kB") in bytes.
func statusKiB(status []byte, field string) (int64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q in /proc status", field, line)
		}
		kib, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s line %q: %w", field, line, err)
		}
		return kib * 1024, nil
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// cpuTime returns utime+stime (fields 14 and 15) of /proc/<pid>/stat. The command name,
// field 2, is in parentheses and may contain spaces, so fields are counted after its ')'.
func cpuTime(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc stat %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')': field 3 (state) is f[0], so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat %q", stat)
	}
	var ticks int64
	for _, s := range f[14-3 : 15-3+1] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing CPU ticks %q in /proc stat: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
