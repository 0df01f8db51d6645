// Package dashboard serves the rollout dashboard: two server-rendered pages (the rollout at
// /dashboard/ and the node view at /dashboard/nodes, written by plain Go code with embedded
// CSS and JavaScript, no CDN and no build step) and the same data as JSON at
// /dashboard/api/v1/rollout and /dashboard/api/v1/nodes. Every path starts with /dashboard
// (Prefix), so that one RBAC rule grants the whole dashboard on the secure port.
// The pages work with JavaScript off (they then reload every 30 seconds through a
// <noscript> meta refresh) and, with JavaScript on, re-fetch themselves every few seconds
// and swap the content in place.
//
// The pages are not html/template: its executor looks methods up by name at run time, which
// makes the linker keep every exported method of every type and grows the controller binary
// by tens of megabytes. They are written through htmlWriter instead (html.go), whose raw
// takes only constant markup.
//
// Everything is read-only: only GET routes, and no route changes cluster state. Every value
// shown comes from the cluster (object names, annotations, attach errors), so it is always
// written through htmlWriter.text (or href for a link), which escapes it exactly as
// html/template would in text and in a quoted attribute; tests pin that escaping with
// hostile values. A strict Content-Security-Policy forbids inline scripts as a second line
// of defence.
package dashboard
