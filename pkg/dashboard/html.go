package dashboard

import (
	"bytes"
	"strconv"
	"strings"
)

// htmlWriter writes the dashboard's HTML. The pages are plain Go code rather than
// html/template: the template executor looks methods up by name at run time, which makes the
// linker keep every exported method of every type in the binary (tens of megabytes, and
// resident memory with them).
//
// The security property is the one html/template gave: raw takes only constant markup
// written in this package, and every value that comes from the cluster (object names,
// annotations, attach errors, reasons) goes through text, or href for a link, which escape it
// exactly as html/template escapes a value in text and in a quoted attribute. No method
// takes a value and writes it unescaped. A strict Content-Security-Policy stays as a second
// line of defence.
type htmlWriter struct{ *bytes.Buffer }

// raw writes constant markup. Never pass it a value: use text.
func (w htmlWriter) raw(markup string) { w.WriteString(markup) }

// text writes s escaped for HTML text and for a quoted attribute value.
func (w htmlWriter) text(s string) { w.WriteString(escapeHTML(s)) }

// int writes n in decimal; digits and a minus sign need no escaping.
func (w htmlWriter) int(n int) { w.WriteString(strconv.Itoa(n)) }

// float writes f as fmt's %v does (shortest representation, an exponent for large or tiny
// values), escaped: an exponent or +Inf has a '+'.
func (w htmlWriter) float(f float64) { w.text(strconv.FormatFloat(f, 'g', -1, 64)) }

// bool writes true or false.
func (w htmlWriter) bool(b bool) { w.WriteString(strconv.FormatBool(b)) }

// href writes u as the value of a quoted URL attribute (href), as html/template does: a
// URL with a scheme other than http, https or mailto is replaced by #ZgotmplZ, characters
// a URL cannot hold are percent-encoded (valid escapes are kept), then the result is
// HTML-escaped, so a query's & becomes &amp;.
func (w htmlWriter) href(u string) {
	if !isSafeURL(u) {
		u = "#" + unsafeURLReplacement
	}
	w.text(normalizeURL(u))
}

// unsafeURLReplacement is what html/template writes instead of an unsafe URL (after a #, so
// the link goes nowhere); the odd name is easy to search for.
const unsafeURLReplacement = "ZgotmplZ"

// htmlEscapes is html/template's replacement table for text and quoted attributes: NUL
// (a parse error in HTML) and every character that could end an attribute value or start
// markup or an entity. '+' is escaped against UTF-7 sniffing.
var htmlEscapes = [...]string{
	0:    "\uFFFD",
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// escapeHTML escapes s as html/template's HTML escaper does. Every character it replaces
// is ASCII, and no byte of a multi-byte UTF-8 sequence (or of invalid UTF-8) is below 0x80,
// so scanning bytes replaces exactly the characters html/template replaces and passes the
// rest through unchanged.
func escapeHTML(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if int(c) >= len(htmlEscapes) || htmlEscapes[c] == "" {
			continue
		}
		if written == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[written:i])
		b.WriteString(htmlEscapes[c])
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// isSafeURL reports whether u has no scheme (a relative URL, as every dashboard link is) or
// one of http, https and mailto; a javascript: or data: URL is not safe.
func isSafeURL(u string) bool {
	if scheme, _, ok := strings.Cut(u, ":"); ok && !strings.Contains(scheme, "/") {
		return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "mailto")
	}
	return true
}

// normalizeURL percent-encodes, as lowercase %xx of its UTF-8 bytes, every byte of u that is
// neither unreserved, nor a reserved character, nor the start of a valid %xx escape, as
// html/template's URL normalizer does; quotes, spaces and non-ASCII characters are encoded.
func normalizeURL(u string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	written := 0
	for i := 0; i < len(u); i++ {
		c := u[i]
		if urlKeeps(c) || c == '%' && i+2 < len(u) && isHex(u[i+1]) && isHex(u[i+2]) {
			continue
		}
		if written == 0 {
			b.Grow(len(u) + 16)
		}
		b.WriteString(u[written:i])
		b.Write([]byte{'%', hex[c>>4], hex[c&0xf]})
		written = i + 1
	}
	if written == 0 {
		return u
	}
	b.WriteString(u[written:])
	return b.String()
}

// urlKeeps reports whether the URL normalizer leaves c as is: RFC 3986's unreserved
// characters and its reserved ones except the single quote and parentheses (encoded so a URL
// can sit in any attribute).
func urlKeeps(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
