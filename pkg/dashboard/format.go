package dashboard

import (
	"fmt"
	"strconv"
	"time"
)

// The pages' formatting helpers. Each returns plain text, which the renderers write through
// htmlWriter.text like any other value.

// num renders a bar percentage as short as possible: 50, 33.3.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// clock renders the page's generation time for people, in UTC.
func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// rfc3339 renders a time for the page's JavaScript (data-time) and for tooltips.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// relative renders t relative to now: "1m30s ago", "in 4s", or "-" when t is unknown.
func relative(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return "in " + d.String()
	case d < 0:
		return (-d).String() + " ago"
	}
	return "now"
}

// due renders a next-retry time: "in 4s", "due" once it has passed, "-" when unknown.
func due(t *time.Time, now time.Time) string {
	if t != nil && !t.IsZero() && !t.After(now) {
		return "due"
	}
	return relative(t, now)
}

// formatSeconds renders an operation duration: milliseconds below a second.
func formatSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}
