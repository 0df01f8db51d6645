// Command mdlinks checks the links of Markdown files without the network: every relative
// link must name a file or folder that exists, and every #anchor must name a heading (or an
// explicit id/name anchor) of the target Markdown file, by GitHub's anchor rules. Links to
// other schemes (https:, mailto:) are not checked. `make lint` runs it over README.md and
// docs/*.md:
//
//	go run ./internal/mdlinks README.md docs/*.md
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mdlinks FILE.md...")
		os.Exit(2)
	}
	var problems []string
	for _, path := range os.Args[1:] {
		p, err := checkFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		problems = append(problems, p...)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d broken links\n", len(problems))
		os.Exit(1)
	}
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"|\sid="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	fence      = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkFile returns a line per broken link of the Markdown file at path.
func checkFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var problems []string
	cache := map[string]map[string]bool{}
	for i, line := range proseLines(string(data)) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if msg := checkLink(path, target, cache); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", path, i+1, target, msg))
			}
		}
	}
	return problems, nil
}

// proseLines returns the file's lines with those inside fenced code blocks blanked, so line
// numbers stay those of the file.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	in := ""
	for i, l := range lines {
		if m := fence.FindStringSubmatch(l); m != nil {
			switch {
			case in == "":
				in = m[1]
			case in == m[1]:
				in = ""
			}
			lines[i] = ""
			continue
		}
		if in != "" {
			lines[i] = ""
		}
	}
	return lines
}

// checkLink returns why target, a link in the file from, is broken, or "".
func checkLink(from, target string, cache map[string]map[string]bool) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	if i := strings.Index(file, "?"); i >= 0 {
		file = file[:i]
	}
	dest := from
	if file != "" {
		if strings.HasPrefix(file, "/") {
			dest = filepath.Clean("." + file) // relative to the repository root, as GitHub reads it
		} else {
			dest = filepath.Join(filepath.Dir(from), file)
		}
		if _, err := os.Stat(dest); err != nil {
			return "no such file or folder"
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	anchors, ok := cache[dest]
	if !ok {
		data, err := os.ReadFile(dest)
		if err != nil {
			return err.Error()
		}
		anchors = Anchors(string(data))
		cache[dest] = anchors
	}
	if !anchors[strings.ToLower(anchor)] {
		return "no heading with anchor #" + anchor + " in " + dest
	}
	return ""
}

// Anchors returns the anchors GitHub gives a Markdown text: one per heading (Slug, with -1,
// -2, ... for repeats) and the explicit <a name>/id anchors.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[strings.ToLower(m[1]+m[2])] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var (
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// Slug is GitHub's anchor of a heading: the text of its inline Markdown, lower-cased, with
// every character but letters, digits, '-', '_' and spaces dropped and spaces turned into '-'.
func Slug(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
