// Package dashboard serves the rollout dashboard: one server-rendered page (html/template,
// embedded CSS and JavaScript, no CDN and no build step) and the same data as JSON at
// /api/v1/rollout. The page works with JavaScript off (it then reloads itself every 30
// seconds through a <noscript> meta refresh) and, with JavaScript on, re-fetches itself
// every few seconds and swaps the content in place.
//
// Everything is read-only: only GET routes, and no route changes cluster state. Every value
// shown comes from the cluster (object names, annotations, attach errors), so it is always
// rendered through html/template's contextual escaping and never as template.HTML; a strict
// Content-Security-Policy forbids inline scripts as a second line of defence.
package dashboard
