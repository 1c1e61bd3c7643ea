// Package ui is Quarry's web UI: plain HTML, JavaScript and CSS embedded in
// the binary, served at / by package server. It talks to the HTTP API like
// any other client.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the UI: index.html at / and its assets under /ui/.
func Handler() http.Handler {
	sub, _ := fs.Sub(static, "static") // the folder is embedded: it exists
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		switch {
		case r.URL.Path == "/":
			http.ServeFileFS(w, r, sub, "index.html")
		case len(r.URL.Path) > 4 && r.URL.Path[:4] == "/ui/":
			http.StripPrefix("/ui", files).ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
