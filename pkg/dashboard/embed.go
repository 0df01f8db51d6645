package dashboard

import (
	"embed"
	"io/fs"
)

// embedded holds the CSS and JavaScript served under /dashboard/static/.
//
//go:embed static
var embedded embed.FS

// staticFS is the static folder's content, rooted so /dashboard/static/dashboard.css maps to it.
var staticFS = mustSub(embedded, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic("dashboard: embedded folder " + dir + ": " + err.Error())
	}
	return sub
}
