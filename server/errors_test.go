package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWrongMethodIsAProblem: a method a path does not have is a JSON 405
// naming the ones it has (Allow), and a path no route has a JSON 404 —
// not the web UI's plain-text page.
func TestWrongMethodIsAProblem(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/collections/kb/search", http.StatusMethodNotAllowed, "POST"},
		{"DELETE", "/v1/collections/kb/ask", http.StatusMethodNotAllowed, "POST"},
		{"GET", "/v1/no/such/thing", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		r := f.do(t, tt.method, tt.path, "", nil)
		if r.status != tt.status || r.header.Get("Allow") != tt.allow || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s %s: %d, Allow %q, %s: %s", tt.method, tt.path, r.status, r.header.Get("Allow"), r.header.Get("Content-Type"), r.raw)
		}
	}
}
