package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/migration-aware/adc/pkg/kcm"
	"github.com/migration-aware/adc/pkg/metrics"
)

// referencePath is the reference page this test keeps honest.
const referencePath = "../../docs/reference.md"

var updateReference = flag.Bool("update-reference", false,
	"rewrite the generated blocks of docs/reference.md (flags of every subcommand, metrics) from the code")

// TestReferenceDocumentsFlagsAndMetrics fails when a flag of `adc controller` or a metric adc
// registers is not named in docs/reference.md. The flags come from the command's real flag
// set (newControllerCommand), the metrics from pkg/metrics registering itself into a
// recording registry, so neither list is kept by hand. To regenerate the generated blocks:
//
//	go test ./cmd/adc -run TestReference -update-reference
func TestReferenceDocumentsFlagsAndMetrics(t *testing.T) {
	if *updateReference {
		if err := writeReference(t); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("reading the reference: %v", err)
	}
	doc := string(data)
	hint := "; run `go test ./cmd/adc -run TestReference -update-reference` to regenerate the tables of docs/reference.md, then describe it there if it needs more than its usage string"

	for _, section := range flagSections(t, newControllerCommand()) {
		for _, f := range section.flags {
			if !strings.Contains(doc, "`--"+f.Name+"`") {
				t.Errorf("flag --%s of adc controller (%s flags) is missing from docs/reference.md%s", f.Name, section.name, hint)
			}
		}
	}
	names := registeredMetrics(t)
	if len(names) < 10 {
		t.Fatalf("found only %d metrics registered by pkg/metrics; the enumeration is broken", len(names))
	}
	for _, m := range names {
		if !strings.Contains(doc, "`"+m.name+"`") {
			t.Errorf("metric %s is missing from docs/reference.md%s", m.name, hint)
		}
	}
}

// flagSection is one named group of a command's flags, in the order `--help` prints them.
type flagSection struct {
	name  string
	flags []*pflag.Flag
}

var (
	sectionHeader = regexp.MustCompile(`^(\S.*) flags:$`)
	flagLine      = regexp.MustCompile(`^\s+(?:-\w, )?--([A-Za-z0-9][A-Za-z0-9_.-]*)`)
)

// flagSections returns cmd's flags grouped as its help groups them (cliflag.NamedFlagSets:
// "Recommended flags:", ...), every flag of cmd.Flags() exactly once. A command without named
// sections gets one section, "".
func flagSections(t *testing.T, cmd *cobra.Command) []flagSection {
	t.Helper()
	all := map[string]*pflag.Flag{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			all[f.Name] = f
		}
	})
	var sections []flagSection
	seen := map[string]bool{}
	cur := -1
	sc := bufio.NewScanner(strings.NewReader(cmd.UsageString()))
	for sc.Scan() {
		line := sc.Text()
		if m := sectionHeader.FindStringSubmatch(line); m != nil && m[1] != "Global" {
			sections = append(sections, flagSection{name: m[1]})
			cur = len(sections) - 1
			continue
		}
		m := flagLine.FindStringSubmatch(line)
		if m == nil || cur < 0 {
			continue
		}
		if f, ok := all[m[1]]; ok && !seen[f.Name] {
			seen[f.Name] = true
			sections[cur].flags = append(sections[cur].flags, f)
		}
	}
	var rest []*pflag.Flag
	for name, f := range all {
		if !seen[name] {
			rest = append(rest, f)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	if len(rest) > 0 {
		name := ""
		if len(sections) > 0 {
			name = "Other"
		}
		sections = append(sections, flagSection{name: name, flags: rest})
	}
	return sections
}

// metricInfo is one metric pkg/metrics registers.
type metricInfo struct {
	name, kind, labels, help string
}

// recordingRegistry registers into a real KubeRegistry (which creates the lazy metrics) and
// keeps what was registered.
type recordingRegistry struct {
	inner      k8smetrics.KubeRegistry
	collectors []k8smetrics.Registerable
	custom     []k8smetrics.StableCollector
}

func (r *recordingRegistry) Register(c k8smetrics.Registerable) error {
	r.collectors = append(r.collectors, c)
	return r.inner.Register(c)
}

func (r *recordingRegistry) CustomRegister(c k8smetrics.StableCollector) error {
	r.custom = append(r.custom, c)
	return r.inner.CustomRegister(c)
}

var descFields = regexp.MustCompile(`fqName: "([^"]*)", help: "((?:[^"\\]|\\.)*)".*variableLabels: \{([^}]*)\}`)

// registeredMetrics returns every metric pkg/metrics registers, from its descriptors, sorted.
func registeredMetrics(t *testing.T) []metricInfo {
	t.Helper()
	r := &recordingRegistry{inner: k8smetrics.NewKubeRegistry()}
	if err := metrics.New().Register(r); err != nil {
		t.Fatalf("registering pkg/metrics: %v", err)
	}
	byName := map[string]metricInfo{}
	add := func(kind, desc string) {
		m := descFields.FindStringSubmatch(desc)
		if m == nil {
			t.Fatalf("cannot read the metric descriptor %s", desc)
		}
		help := strings.TrimPrefix(strings.TrimPrefix(m[2], "[ALPHA] "), "[BETA] ")
		if _, ok := byName[m[1]]; !ok {
			byName[m[1]] = metricInfo{name: m[1], kind: kind, labels: m[3], help: help}
		}
	}
	for _, c := range r.collectors {
		kind := "gauge"
		switch c.(type) {
		case *k8smetrics.CounterVec, *k8smetrics.Counter:
			kind = "counter"
		case *k8smetrics.HistogramVec, *k8smetrics.Histogram:
			kind = "histogram"
		}
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		n := 0
		for d := range ch {
			add(kind, d.String())
			n++
		}
		if n == 0 {
			// A collector that describes nothing still has its name.
			byName[c.FQName()] = metricInfo{name: c.FQName(), kind: kind}
		}
	}
	// A custom collector's descriptors do not say a metric's type (it is chosen per sample at
	// scrape time); by Prometheus' naming rule a counter's name ends in _total.
	for _, c := range r.custom {
		ch := make(chan *k8smetrics.Desc, 32)
		go func() { c.DescribeWithStability(ch); close(ch) }()
		for d := range ch {
			kind := "gauge"
			if m := descFields.FindStringSubmatch(d.String()); m != nil && strings.HasSuffix(m[1], "_total") {
				kind = "counter"
			}
			add(kind, d.String())
		}
	}
	out := make([]metricInfo, 0, len(byName))
	for _, m := range byName {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// writeReference rewrites each generated block of docs/reference.md: the text between
// "<!-- BEGIN GENERATED: KEY -->" and "<!-- END GENERATED: KEY -->".
func writeReference(t *testing.T) error {
	data, err := os.ReadFile(referencePath)
	if err != nil {
		return err
	}
	doc := string(data)
	blocks := map[string]string{"metrics": metricsTable(registeredMetrics(t))}
	root := newRootCommand()
	for _, sub := range root.Commands() {
		name := sub.Name()
		if name == "help" || name == "completion" {
			continue
		}
		blocks["flags "+name] = flagTables(flagSections(t, sub))
	}
	kcmFlags := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	kcm.AddFlags(kcmFlags)
	var kcmSection flagSection
	kcmFlags.VisitAll(func(f *pflag.Flag) { kcmSection.flags = append(kcmSection.flags, f) })
	blocks["flags kube-controller-manager"] = flagTables([]flagSection{kcmSection})
	for key, body := range blocks {
		begin, end := "<!-- BEGIN GENERATED: "+key+" -->\n", "<!-- END GENERATED: "+key+" -->"
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			t.Logf("docs/reference.md has no generated block %q; not written", key)
			continue
		}
		doc = doc[:i+len(begin)] + body + doc[j:]
	}
	return os.WriteFile(referencePath, []byte(doc), 0o644)
}

func flagTables(sections []flagSection) string {
	var b strings.Builder
	for _, s := range sections {
		if s.name != "" {
			fmt.Fprintf(&b, "\n%s:\n\n", s.name)
		}
		b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
		for _, f := range s.flags {
			name := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				name = "`-" + f.Shorthand + "`, " + name
			}
			def := f.DefValue
			switch {
			case def == "" || def == "[]" || def == "map[]":
				def = ""
			default:
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, cell(def), cell(f.Usage))
		}
	}
	return b.String()
}

func metricsTable(ms []metricInfo) string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | meaning |\n|---|---|---|---|\n")
	for _, m := range ms {
		labels := ""
		if m.labels != "" {
			labels = "`" + strings.ReplaceAll(m.labels, ",", "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.name, m.kind, labels, cell(m.help))
	}
	return b.String()
}

// cell makes s fit one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return s
}
