package scenario

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/migration-aware/adc/test/bench/internal/auditcount"
)

// Report writes one run's measures.
func Report(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n%s: %d nodes x %d pods = %d volumes, client %g QPS / %d burst\n", r.Controller, r.Nodes, r.PodsPerNode, r.Volumes, r.QPS, r.Burst)
	fmt.Fprintf(w, "  machine load average (1 min): %.1f at the start, %.1f at convergence (2 cores)\n", r.LoadStart, r.LoadConverged)
	fmt.Fprintf(w, "  first VolumeAttachment exists:        %s\n", Dur(r.FirstVolumeAttachment))
	fmt.Fprintf(w, "  every VolumeAttachment exists:        %s\n", Dur(r.AllVolumeAttachments))
	fmt.Fprintf(w, "  every volume attached (the attacher): %s (half: %s)\n", Dur(r.AllAttached), Dur(r.AttachedP50))
	fmt.Fprintf(w, "  every volume listed in node status:   %s   (API budget, required writes / QPS: %s)\n", Dur(r.AllListed), Dur(r.APIBudget))
	fmt.Fprintf(w, "  time to be listed from start:         p50 %s, p90 %s\n", Dur(r.ListedP50), Dur(r.ListedP90))
	fmt.Fprintf(w, "  VA attached -> listed in node status: p50 %s, p99 %s\n", Dur(r.AttachedToListedP50), Dur(r.AttachedToListedP99))
	if r.ProcessMeasured {
		fmt.Fprintf(w, "  max RSS: %.1f MiB (%.1f KiB per volume); at convergence %.1f MiB\n", MiB(r.MaxRSS), r.RSSPerVolumeKiB(), MiB(r.MaxRSSAttach))
		fmt.Fprintf(w, "  CPU: %.2fs to convergence (%.2fs per 1000 attaches), %.2fs detaching\n", r.CPUAttach.Seconds(), r.CPUPer1000Attaches(), r.CPUDetach.Seconds())
	}
	fmt.Fprintf(w, "  requests per attach by verb:%s (+%d non-resource)\n", PerVolume(r.Attach, r.Volumes), r.Attach.NonResource)
	fmt.Fprintf(w, "  requests per attach by resource:%s\n", PerVolumeByResource(r.Attach, r.Volumes))
	fmt.Fprintf(w, "  API server time per request in the attach phase, p50/p99:%s\n", Latencies(r.Attach))
	fmt.Fprintf(w, "  writes per attach: %.3f\n", r.WritesPerAttach())
	fmt.Fprintf(w, "  steady state (after convergence, before the deletes): %d requests%s\n", r.Steady.Total(), Verbs(r.Steady))
	fmt.Fprintf(w, "  every pod deleted -> every VolumeAttachment gone: %s\n", Dur(r.AllDetached))
	fmt.Fprintf(w, "  requests per detach by verb:%s\n", PerVolume(r.Detach, r.Volumes))
	fmt.Fprintf(w, "  errors: API responses >= 400: %s; error lines in the log: %d\n", Codes(r.Errors), r.LogErrors)
	for _, k := range sortedKeys(r.ErrorsByRequest) {
		fmt.Fprintf(w, "    %s: %d\n", k, r.ErrorsByRequest[k])
	}
	if r.Log != "" {
		fmt.Fprintf(w, "  log: %s\n", r.Log)
	}
}

// Dur formats a duration as seconds, or milliseconds below one second.
func Dur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// MiB converts bytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// PerVolume formats requests by verb divided by the volumes, verbs sorted.
func PerVolume(c auditcount.Counts, volumes int) string {
	var b strings.Builder
	for _, v := range sortedKeys(c.ByVerb) {
		fmt.Fprintf(&b, " %s=%.3f", v, float64(c.ByVerb[v])/float64(volumes))
	}
	return b.String()
}

// PerVolumeByResource formats requests by verb and resource divided by the volumes.
func PerVolumeByResource(c auditcount.Counts, volumes int) string {
	var b strings.Builder
	for _, v := range sortedKeys(c.ByResource) {
		fmt.Fprintf(&b, " %s=%.3f", strings.ReplaceAll(v, " ", ":"), float64(c.ByResource[v])/float64(volumes))
	}
	return b.String()
}

// Latencies formats the API server's p50/p99 per "verb resource" with at least 1% of the
// requests, e.g. " create:volumeattachments=12ms/310ms".
func Latencies(c auditcount.Counts) string {
	var b strings.Builder
	for _, k := range sortedKeys(c.ByResource) {
		l, ok := c.Latency[k]
		if !ok || c.ByResource[k]*100 < c.Total() {
			continue
		}
		fmt.Fprintf(&b, " %s=%s/%s", strings.ReplaceAll(k, " ", ":"), l.P50.Round(time.Millisecond/10), l.P99.Round(time.Millisecond/10))
	}
	return b.String()
}

// Verbs formats counts by verb, verbs sorted.
func Verbs(c auditcount.Counts) string {
	if len(c.ByVerb) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (")
	for i, v := range sortedKeys(c.ByVerb) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", v, c.ByVerb[v])
	}
	b.WriteString(")")
	return b.String()
}

// Codes formats error counts by HTTP code, "none" when there are none.
func Codes(m map[int]int64) string {
	if len(m) == 0 {
		return "none"
	}
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d x%d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
