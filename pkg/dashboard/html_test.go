package dashboard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/migration-aware/adc/pkg/migration"
	"github.com/migration-aware/adc/pkg/rollout"
)

// TestEscapeHTML pins htmlWriter's escaping to html/template's for text and quoted
// attributes; since the pages no longer go through html/template, this is what keeps
// cluster data from becoming markup.
func TestEscapeHTML(t *testing.T) {
	tests := []struct{ in, want string }{
		{"node-a", "node-a"},
		{"", ""},
		{"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
		{`say "hi" and 'bye'`, "say &#34;hi&#34; and &#39;bye&#39;"},
		{"a&b&amp;", "a&amp;b&amp;amp;"},
		{"1+1", "1&#43;1"},
		{"nul\x00", "nul\uFFFD"},
		{"héllo ✓ 日本", "héllo ✓ 日本"},
		{"bad \xff utf-8 <", "bad \xff utf-8 &lt;"},
	}
	for _, tt := range tests {
		if got := escapeHTML(tt.in); got != tt.want {
			t.Errorf("escapeHTML(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestHref: links are filtered (no javascript: or data: URL), normalized and escaped as
// html/template did, so a query's & is &amp; and a quote cannot end the attribute.
func TestHref(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/dashboard/nodes", "/dashboard/nodes"},
		{nodesURL(rollout.NodeFilter{Plugin: "kubernetes.io/gce-pd", State: "not-migrated"}), "/dashboard/nodes?plugin=kubernetes.io%2Fgce-pd&amp;state=not-migrated"},
		{"javascript:alert(1)", "#ZgotmplZ"},
		{"JavaScript:alert(1)", "#ZgotmplZ"},
		{"data:text/html,<b>", "#ZgotmplZ"},
		{"https://example.com/?a=1+2", "https://example.com/?a=1&#43;2"},
		{`/x"><script>`, "/x%22%3e%3cscript%3e"},
		{"/a b'é", "/a%20b%27%c3%a9"},
		{"/ok%2Fstays%zz", "/ok%2Fstays%25zz"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		htmlWriter{&buf}.href(tt.in)
		if got := buf.String(); got != tt.want {
			t.Errorf("href(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRenderEscapesHostileValues renders both pages with hostile cluster data and checks
// that each value appears escaped where the page shows it as text and where it sits in an
// attribute, and never raw.
func TestRenderEscapesHostileValues(t *testing.T) {
	const (
		node   = "<img src=x onerror=alert(1)>"
		reason = `quote " and apostrophe ' end an attribute`
	)
	nodeEsc := "&lt;img src=x onerror=alert(1)&gt;"
	reasonEsc := "quote &#34; and apostrophe &#39; end an attribute"
	report := rollout.Report{
		Held:     []rollout.HeldPair{{Node: node, Pod: reason, Volume: "v", Mechanism: migration.MechanismWait, Reason: reason}},
		Problems: []rollout.Problem{{Kind: rollout.ProblemMultiAttach, Node: node, Reason: reason}},
		Notes:    []rollout.NodeNote{{Node: node, Message: reason}},
		Nodes:    []rollout.NodeRollout{{Name: node, KubeletVersion: reason, Source: rollout.NodeObjectCSINode}},
		NodeLoss: []rollout.NodeLossVolume{{Node: node, PV: "pv-1", Rule: "never", Held: true, Reason: reason}},
	}
	var pageBuf, nodesBuf bytes.Buffer
	renderPage(&pageBuf, newPage(report))
	renderNodes(&nodesBuf, newNodesPage(report.NodesView(rollout.NodeFilter{})))
	tests := []struct {
		name, html, raw, want string
	}{
		{"held node in text", pageBuf.String(), node, `<td class="nowrap">` + nodeEsc + `</td>`},
		{"held node in attribute", pageBuf.String(), node, `data-node="` + nodeEsc + `"`},
		{"held pod in attribute", pageBuf.String(), reason, `data-pod="` + reasonEsc + `"`},
		{"held reason in text", pageBuf.String(), reason, `<td class="reason">` + reasonEsc + `</td>`},
		{"problem reason in text", pageBuf.String(), reason, `<td class="reason">` + reasonEsc + `</td></tr>`},
		{"note in text", pageBuf.String(), reason, `<span class="note">` + reasonEsc + `</span>`},
		{"node-loss row: rule and outlook", pageBuf.String(), node, `<td class="nowrap">pv-1</td><td class="nowrap">never</td><td class="nowrap">held by policy</td><td class="reason">` + reasonEsc + `</td>`},
		{"node view name in attribute", nodesBuf.String(), node, `<tr data-node="` + nodeEsc + `">`},
		{"node view name in text", nodesBuf.String(), node, `data-field="name">` + nodeEsc + `</td>`},
		{"kubelet version in text", nodesBuf.String(), reason, `data-field="kubelet">` + reasonEsc + `</td>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.html, tt.raw) {
				t.Errorf("the raw value %q reached the page", tt.raw)
			}
			if !strings.Contains(tt.html, tt.want) {
				t.Errorf("the page lacks %q", tt.want)
			}
		})
	}
}

// While another attach/detach controller fences adc, the page says so first, escaped; once it
// is gone, the banner goes.
func TestRenderOtherControllerBanner(t *testing.T) {
	msg := "Another attach/detach controller is running: <b>kube-controller-manager</b>"
	for _, tc := range []struct {
		name   string
		fenced bool
	}{{"fenced", true}, {"resumed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			renderPage(&buf, newPage(rollout.Report{OtherController: &rollout.OtherController{Fenced: tc.fenced, Message: msg}}))
			want := `<p class="banner standby" id="other-controller" role="alert">Another attach/detach controller is running: &lt;b&gt;kube-controller-manager&lt;/b&gt;</p>`
			if got := strings.Contains(buf.String(), want); got != tc.fenced {
				t.Errorf("banner shown: %v, want %v", got, tc.fenced)
			}
		})
	}
}
