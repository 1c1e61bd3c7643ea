package hierarchy

import (
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

// TestSymbolPathKeywords: a Go chunk's symbol path gives its names as
// keywords, never the declaration keyword every Go chunk has (which topped
// every code node's triggers); a heading that only starts with the word
// keeps it.
func TestSymbolPathKeywords(t *testing.T) {
	tests := []struct {
		headings []string
		want     []string
		not      string
	}{
		{[]string{"package bufio", "func (*Reader) ReadString"}, []string{"bufio", "readstring"}, "package"},
		{[]string{"package http", "var ErrBodyNotAllowed …"}, []string{"http", "errbodynotallowed"}, "var"},
		{[]string{"package tls", "const VersionTLS12 …"}, []string{"tls", "versiontls12"}, "const"},
		{[]string{"Package management", "Lock files"}, []string{"package", "management"}, ""},
	}
	for _, tt := range tests {
		d := document.New("x")
		d.Provenance.HeadingPath = tt.headings
		got := chunkKeywords(d)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: keywords %q lack %q", tt.headings, got, w)
			}
		}
		if tt.not != "" && slices.Contains(got, tt.not) {
			t.Errorf("%q: keywords %q hold %q", tt.headings, got, tt.not)
		}
	}
}
